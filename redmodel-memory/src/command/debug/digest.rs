//! DEBUG DIGEST and DIGEST-VALUE: Redis 7.0.15's SHA-1 signatures of the
//! dataset and of values (`computeDatasetDigest`, `xorObjectDigest` in
//! debug.c), byte for byte, so a signature taken on the engine equals the
//! real server's for the same data. Order-free parts (a set's members, a
//! hash's fields, a sorted set's members) are XORed; ordered ones (a
//! list's elements, a stream's entries) are mixed in order.

use crate::command::Store;
use crate::float::format_double;
use crate::keyspace::Keyspace;
use crate::value::Value;

/// A signature in progress (20 bytes, as SHA-1's).
pub(super) type Digest = [u8; 20];

fn sha1(bytes: &[u8]) -> Digest {
    sha1_smol::Sha1::from(bytes).digest().bytes()
}

/// Redis's `xorDigest`: XORs in the SHA-1 of `bytes`.
fn xor(digest: &mut Digest, bytes: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(bytes)) {
        *d ^= h;
    }
}

/// Redis's `mixDigest`: XORs in the SHA-1 of `bytes`, then hashes the
/// result (so the order of mixing matters).
fn mix(digest: &mut Digest, bytes: &[u8]) {
    xor(digest, bytes);
    *digest = sha1(digest);
}

/// Redis's type numbers (`OBJ_STRING`...), as the digest mixes them.
fn type_number(value: &Value) -> u32 {
    match value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

/// Redis's `xorObjectDigest`: the value's signature mixed into `digest`,
/// and whether the key has a TTL.
pub(super) fn value_digest(digest: &mut Digest, value: &Value, expires: bool) {
    mix(digest, &type_number(value).to_be_bytes());
    match value {
        Value::Str(s) => mix(digest, s),
        Value::List(list) => list.iter().for_each(|e| mix(digest, e)),
        Value::Set(set) => set.iter().for_each(|m| xor(digest, &m)),
        Value::ZSet(zset) => {
            for (member, score) in zset.iter() {
                let mut element = [0; 20];
                mix(&mut element, member);
                mix(&mut element, format_double(score).as_bytes());
                xor(digest, &element);
            }
        }
        Value::Hash(hash) => {
            for (field, value) in hash.iter() {
                let mut element = [0; 20];
                mix(&mut element, field);
                mix(&mut element, value);
                xor(digest, &element);
            }
        }
        Value::Stream(stream) => {
            let (first, last) = (Default::default(), crate::value::stream::StreamId::MAX);
            for (id, fields) in stream.range(first, last, false) {
                mix(digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                fields.iter().for_each(|f| mix(digest, f));
            }
        }
    }
    if expires {
        xor(digest, b"!!expire!!");
    }
}

/// The signature of one database's keys and values, mixed into `digest`
/// after its number (`computeDatasetDigest`'s loop body).
fn database_digest(digest: &mut Digest, number: u32, ks: &Keyspace) {
    mix(digest, &number.to_be_bytes());
    for (_, entry) in ks.stored_entries() {
        let mut pair = [0; 20];
        mix(&mut pair, entry.key());
        value_digest(&mut pair, &entry.value, ks.expire_at(entry.key()).is_some());
        xor(digest, &pair);
    }
}

/// Redis's `computeDatasetDigest`: every non-empty database, its keys
/// (expired ones not yet reclaimed included, as Redis's walk of its
/// tables) and their values; all zeros for an empty dataset.
pub(super) fn dataset_digest(store: &Store) -> Digest {
    let mut digest = [0; 20];
    for (number, ks) in (0u32..).zip(&store.dbs) {
        if ks.len() > 0 {
            database_digest(&mut digest, number, ks);
        }
    }
    digest
}

/// A signature as Redis prints it: 40 lower-case hex digits.
pub(super) fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
