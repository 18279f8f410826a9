//! How a member of a list or an index is given: its handle, the object
//! itself, or its key as text.

use super::object::ObjectRef;
use super::{Admin, Model};
use crate::{Db, Result};

/// Something that names a member of model `M`: its handle, the object
/// itself, or its key as text (checked to be a key of `M`).
pub trait AsMember<M: Model> {
    /// The member's key, or why the text is not a key of `M`.
    fn member_key(&self) -> Result<String>;
}

impl<M: Model> AsMember<M> for ObjectRef<M> {
    fn member_key(&self) -> Result<String> {
        Ok(self.key().to_string())
    }
}

impl<M: Model> AsMember<M> for &ObjectRef<M> {
    fn member_key(&self) -> Result<String> {
        Ok(self.key().to_string())
    }
}

impl<M: Admin> AsMember<M> for &M {
    fn member_key(&self) -> Result<String> {
        Ok(self.handle().into_key())
    }
}

impl<M: Model> AsMember<M> for &str {
    fn member_key(&self) -> Result<String> {
        Ok(ObjectRef::<M>::parse(self)?.into_key())
    }
}

impl<M: Model> AsMember<M> for String {
    fn member_key(&self) -> Result<String> {
        Ok(ObjectRef::<M>::parse(self)?.into_key())
    }
}

/// `member`'s key as `db` stores it (what index and list entries hold).
pub(crate) fn stored_member<M: Model>(db: &Db, member: impl AsMember<M>) -> Result<String> {
    Ok(db.stored(&member.member_key()?).into_owned())
}
