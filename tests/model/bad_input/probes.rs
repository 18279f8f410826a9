//! Typed reads of each model.

#[allow(unused_imports)]
use super::*;

/// A model the checks know: its oracle tag, its values as [`Val`]s, and
/// its typed field reads (which need the field handles by name).
pub(crate) trait Probe: Model + fmt::Debug {
    const TAG: Tag;

    /// The data fields' values, in declaration order.
    fn vals(&self) -> Vec<Val>;

    /// Every field read on its own (HGET; GET of a single value), typed.
    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)>;

    /// Fields read together (HMGET), typed, with the names read.
    async fn field_sets(db: &Db, h: &ObjectRef<Self>)
        -> Vec<(Vec<&'static str>, Result<Vec<Val>>)>;
}

pub(crate) fn opt_val<T: ToVal>(value: Option<T>) -> Val {
    value.as_ref().map_or(Val::Absent, ToVal::to_val)
}

macro_rules! each_field {
    ($db:expr, $h:expr; $($field:expr),+ $(,)?) => {
        vec![$(($field.name(), $h.get($db, $field).await.map(|v| v.map(|v| v.to_val())))),+]
    };
}

macro_rules! field_set {
    ($db:expr, $h:expr; $($field:expr => $i:tt),+ $(,)?) => {
        (
            vec![$($field.name()),+],
            $h.get_fields($db, ($($field,)+)).await.map(|t| vec![$(opt_val(t.$i)),+]),
        )
    };
}

impl Probe for Teacher {
    const TAG: Tag = Tag::Teacher;

    fn vals(&self) -> Vec<Val> {
        vec![self.name.to_val(), self.subject.to_val()]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Teacher::NAME, Teacher::SUBJECT)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Teacher::SUBJECT => 0, Teacher::NAME => 1)]
    }
}

impl Probe for Class {
    const TAG: Tag = Tag::Class;

    fn vals(&self) -> Vec<Val> {
        vec![self.name.to_val()]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Class::NAME)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Class::NAME => 0)]
    }
}

impl Probe for Student {
    const TAG: Tag = Tag::Student;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.class.to_val(),
            self.chinese.to_val(),
            self.english.to_val(),
            self.math.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Student::CLASS, Student::CHINESE, Student::ENGLISH, Student::MATH)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h; Student::MATH => 0, Student::CLASS => 1),
            field_set!(db, h;
                Student::CLASS => 0, Student::CHINESE => 1, Student::ENGLISH => 2, Student::MATH => 3),
        ]
    }
}

impl Probe for Exam {
    const TAG: Tag = Tag::Exam;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.chinese.to_val(),
            self.english.to_val(),
            self.math.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Exam::CHINESE, Exam::ENGLISH, Exam::MATH)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Exam::CHINESE => 0, Exam::ENGLISH => 1, Exam::MATH => 2)]
    }
}

impl Probe for Profile {
    const TAG: Tag = Tag::Profile;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.age.to_val(),
            self.score.to_val(),
            self.active.to_val(),
            self.nickname.to_val(),
            self.email.to_val(),
            self.tags.to_val(),
            self.address.to_val(),
            self.extra.to_val(),
            self.visits.to_val(),
            self.level.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h;
            Profile::AGE, Profile::SCORE, Profile::ACTIVE, Profile::NICKNAME, Profile::EMAIL,
            Profile::TAGS, Profile::ADDRESS, Profile::EXTRA, Profile::VISITS, Profile::LEVEL)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h;
                Profile::AGE => 0, Profile::SCORE => 1, Profile::ACTIVE => 2,
                Profile::NICKNAME => 3, Profile::EMAIL => 4),
            field_set!(db, h;
                Profile::TAGS => 0, Profile::ADDRESS => 1, Profile::EXTRA => 2,
                Profile::VISITS => 3, Profile::LEVEL => 4),
        ]
    }
}

impl Probe for Gauge {
    const TAG: Tag = Tag::Gauge;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.tiny.to_val(),
            self.small.to_val(),
            self.medium.to_val(),
            self.large.to_val(),
            self.byte.to_val(),
            self.word.to_val(),
            self.dword.to_val(),
            self.big.to_val(),
            self.size.to_val(),
            self.ratio.to_val(),
            self.amount.to_val(),
            self.delta.to_val(),
            self.flag.to_val(),
            self.owner.to_val(),
            self.history.to_val(),
            self.hits.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h;
            Gauge::TINY, Gauge::SMALL, Gauge::MEDIUM, Gauge::LARGE, Gauge::BYTE, Gauge::WORD,
            Gauge::DWORD, Gauge::BIG, Gauge::SIZE, Gauge::RATIO, Gauge::AMOUNT, Gauge::DELTA,
            Gauge::FLAG, Gauge::OWNER, Gauge::HISTORY, Gauge::HITS)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h;
                Gauge::TINY => 0, Gauge::SMALL => 1, Gauge::MEDIUM => 2, Gauge::LARGE => 3,
                Gauge::BYTE => 4, Gauge::WORD => 5, Gauge::DWORD => 6, Gauge::BIG => 7),
            field_set!(db, h;
                Gauge::SIZE => 0, Gauge::RATIO => 1, Gauge::AMOUNT => 2, Gauge::DELTA => 3,
                Gauge::FLAG => 4, Gauge::OWNER => 5, Gauge::HISTORY => 6, Gauge::HITS => 7),
        ]
    }
}

/// `get_value` of a single-value model, as its one field read.
macro_rules! single_probe {
    ($model:ty, $tag:expr, $field:ident) => {
        impl Probe for $model {
            const TAG: Tag = $tag;

            fn vals(&self) -> Vec<Val> {
                vec![self.$field.to_val()]
            }

            async fn each_field(
                db: &Db,
                h: &ObjectRef<Self>,
            ) -> Vec<(&'static str, Result<Option<Val>>)> {
                vec![(
                    stringify!($field),
                    h.get_value(db).await.map(|v| v.map(|v| v.to_val())),
                )]
            }

            async fn field_sets(
                _: &Db,
                _: &ObjectRef<Self>,
            ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
                Vec::new()
            }
        }
    };
}

single_probe!(Note, Tag::Note, text);
single_probe!(Level, Tag::Level, value);
single_probe!(Reading, Tag::Reading, values);
