use redmodel::model::{Composite, Dim};

/// 2^30 * 2^24 = 2^54 scores: more than a double holds exactly.
const TOO_WIDE: Composite<2> = Composite::new([Dim::bits("a", 30), Dim::bits("b", 24)]);

fn main() {
    let _ = TOO_WIDE;
}
