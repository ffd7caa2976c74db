//! A deserialisation wrapper that accepts only an object and never echoes scalar input.

use core::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

/// `T`, read only from a map. Strings, numbers, booleans and sequences are rejected with a
/// message that names the JSON type but not the value (serde's default echoes strings).
pub(crate) struct Obj<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Obj<T>, D::Error> {
        d.deserialize_any(ObjVisitor(PhantomData))
    }
}

struct ObjVisitor<T>(PhantomData<T>);

fn reject<E: de::Error>(what: &str) -> E {
    E::custom(format_args!("invalid type: {what}, expected an object"))
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Obj)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
        Err(reject("string"))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Obj<T>, E> {
        Err(reject("bytes"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
        Err(reject("boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
        Err(reject("integer"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
        Err(reject("integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
        Err(reject("number"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
        Err(reject("null"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Obj<T>, A::Error> {
        Err(reject("sequence"))
    }
}

/// `deserialize_with` for fields that Go reads from a JSON `null` as their zero value
/// (`encoding/json` leaves a string, number or boolean unchanged and sets a slice or map to nil):
/// `null` becomes `T::default()`.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `deserialize_with` for a Go slice of values: the slice may be `null` (a nil slice) and so may
/// each element (Go leaves the element at its zero value).
pub(crate) fn null_tolerant_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    let items: Option<Vec<Option<T>>> = Deserialize::deserialize(d)?;
    Ok(items
        .unwrap_or_default()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect())
}

/// `serialize_with` for a Go slice that is written without `omitempty`: an empty slice is
/// written as `null`, as Go writes a nil slice (what `kubectl config view -o json` prints for a
/// stanza without the field).
pub(crate) fn empty_as_null<S, T>(v: &[T], s: S) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    T: serde::Serialize,
{
    if v.is_empty() {
        s.serialize_none()
    } else {
        s.serialize_some(v)
    }
}
