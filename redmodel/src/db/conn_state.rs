//! What a connection's own Redis state is (WATCHes, an open MULTI), read
//! off the commands sent on it: one state machine for the pool (between
//! borrowers) and for `DedicatedConnection` (between the attempts of an
//! optimistic transaction).

use redis::{Cmd, Pipeline};

/// The connection state that could disturb the next user's commands.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnState {
    /// A WATCH was sent and no EXEC, DISCARD or UNWATCH since.
    watching: bool,
    /// A MULTI was sent on its own and no EXEC or DISCARD since.
    in_multi: bool,
}

impl ConnState {
    /// Records a command about to be sent: pessimistically (as if it ran),
    /// since a failed WATCH or MULTI leaves nothing a clean-up cannot fix.
    pub(crate) fn sending(&mut self, cmd: &Cmd) {
        let Some(name) = crate::command::name(cmd) else {
            return;
        };
        if name.eq_ignore_ascii_case(b"WATCH") {
            self.watching = true;
        } else if name.eq_ignore_ascii_case(b"MULTI") {
            self.in_multi = true;
        } else if name.eq_ignore_ascii_case(b"EXEC") || name.eq_ignore_ascii_case(b"DISCARD") {
            *self = ConnState::default();
        } else if name.eq_ignore_ascii_case(b"UNWATCH") && !self.in_multi {
            // Inside MULTI, UNWATCH is only queued.
            self.watching = false;
        }
    }

    /// Records a pipeline about to be sent.
    pub(crate) fn sending_pipeline(&mut self, pipeline: &Pipeline) {
        if pipeline.is_transaction() {
            // MULTI ... EXEC in one write: whatever it held, the EXEC (run
            // or aborted) has dropped the WATCHes.
            *self = ConnState::default();
        } else {
            pipeline.cmd_iter().for_each(|cmd| self.sending(cmd));
        }
    }

    /// Whether a MULTI sent on its own is still open: the commands sent
    /// now are only queued.
    pub(crate) fn in_multi(&self) -> bool {
        self.in_multi
    }

    /// The command that brings the connection back to a clean state, if it
    /// needs one: DISCARD (which also drops the WATCHes) or UNWATCH.
    pub(crate) fn clean_up(&self) -> Option<Cmd> {
        if self.in_multi {
            Some(crate::command::cmd("DISCARD"))
        } else if self.watching {
            Some(crate::command::cmd("UNWATCH"))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConnState;
    use crate::command::AddCommand as _;

    fn state_after(names: &[&str]) -> (bool, bool) {
        let mut state = ConnState::default();
        for name in names {
            state.sending(&crate::command::cmd(name));
        }
        (state.watching, state.in_multi)
    }

    #[test]
    fn tracks_watch_and_multi() {
        assert_eq!(state_after(&["GET"]), (false, false));
        assert_eq!(state_after(&["watch", "GET"]), (true, false));
        assert_eq!(state_after(&["WATCH", "UNWATCH"]), (false, false));
        assert_eq!(state_after(&["WATCH", "MULTI"]), (true, true));
        assert_eq!(state_after(&["WATCH", "MULTI", "EXEC"]), (false, false));
        assert_eq!(state_after(&["MULTI", "DISCARD"]), (false, false));
        // UNWATCH inside MULTI is only queued.
        assert_eq!(state_after(&["WATCH", "MULTI", "UNWATCH"]), (true, true));
    }

    #[test]
    fn an_atomic_pipeline_ends_clean_and_a_plain_one_is_read_command_by_command() {
        let mut state = ConnState::default();
        state.sending(&crate::command::cmd("WATCH"));
        let mut plain = redis::pipe();
        plain.command("GET").arg("k");
        state.sending_pipeline(&plain);
        assert_eq!(
            state.clean_up().map(|c| c.get_packed_command()),
            Some(crate::command::cmd("UNWATCH").get_packed_command())
        );
        let mut atomic = redis::pipe();
        atomic.atomic().command("SET").arg("k").arg(1);
        state.sending_pipeline(&atomic);
        assert!(state.clean_up().is_none());
    }
}
