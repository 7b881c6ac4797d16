//! Typed, borrowing, forgiving deserialization of log records.
//!
//! Building a `serde_json::Value` for every record allocates every key and string of it, most of
//! which an adapter throws away (message text, file contents). Deserializing into small structs
//! that name only the fields an adapter reads skips the rest without allocating, and borrows the
//! strings it keeps. Logs are untrusted, though: a field of an unexpected type must not make the
//! whole record unreadable. These wrappers read their field when it has the expected shape and
//! quietly yield `None` otherwise, consuming whatever was there.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Consumes the rest of a sequence.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Consumes the rest of a map.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods of every JSON shape a wrapper does not want: each yields
/// `Default::default()` (that is, `None`) after consuming the value.
macro_rules! ignore_other_shapes {
    ($($skip:ident),*) => {
        $(ignore_other_shapes!(@one $skip);)*
    };
    (@one bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok(Default::default()) }
    };
    (@one num) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok(Default::default()) }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok(Default::default()) }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok(Default::default()) }
    };
    (@one str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok(Default::default()) }
    };
    (@one unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok(Default::default()) }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> { Ok(Default::default()) }
    };
    (@one seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq)?;
            Ok(Default::default())
        }
    };
    (@one map) => {
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map)?;
            Ok(Default::default())
        }
    };
}

/// A string field, borrowed from the record when it has no escapes; `None` for other shapes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The string, when the field was one and is not empty.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(s))))
            }
            ignore_other_shapes!(bool, num, unit, seq, map);
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

/// A boolean field; `None` for other shapes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Bool(pub Option<bool>);

impl<'de> Deserialize<'de> for Bool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(Bool(Some(b)))
            }
            ignore_other_shapes!(num, str, unit, seq, map);
        }
        deserializer.deserialize_any(V)
    }
}

/// A JSON number as it was written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A non-negative integer.
    Unsigned(u64),
    /// A negative integer.
    Signed(i64),
    /// Anything with a fraction or exponent.
    Float(f64),
}

impl Number {
    /// The number as an `i64`, when it is an integer that fits.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Number::Unsigned(n) => i64::try_from(n).ok(),
            Number::Signed(n) => Some(n),
            Number::Float(_) => None,
        }
    }

    /// The number as an `f64` (integers converted).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Unsigned(n) => n as f64,
            Number::Signed(n) => n as f64,
            Number::Float(f) => f,
        }
    }
}

/// A number field; `None` for other shapes.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Num(pub Option<Number>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Num(Some(Number::Unsigned(n))))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(Num(Some(if n >= 0 {
                    Number::Unsigned(n as u64)
                } else {
                    Number::Signed(n)
                })))
            }
            fn visit_f64<E: de::Error>(self, f: f64) -> Result<Self::Value, E> {
                Ok(Num(Some(Number::Float(f))))
            }
            ignore_other_shapes!(bool, str, unit, seq, map);
        }
        deserializer.deserialize_any(V)
    }
}

/// An object field read as `T`; `None` when the field is not an object. `T`'s own fields should
/// be forgiving too (these wrappers), or a wrong type inside still fails the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            ignore_other_shapes!(bool, num, str, unit, seq);
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

/// What a field holding either a list or something else turned out to be.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ListOr<'a, T> {
    /// The field was absent or `null`.
    #[default]
    Absent,
    /// A string (kept, borrowed when it has no escapes: some formats put plain text where a
    /// list of parts may also go).
    Text(Cow<'a, str>),
    /// A list; its elements read as `T`.
    List(Vec<T>),
    /// A number, boolean or object.
    Other,
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for ListOr<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> Visitor<'de> for V<'a, T> {
            type Value = ListOr<'a, T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(ListOr::List(items))
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(ListOr::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(ListOr::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(ListOr::Text(Cow::Owned(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ListOr::Absent)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ListOr::Absent)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ListOr::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ListOr::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ListOr::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ListOr::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map)?;
                Ok(ListOr::Other)
            }
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Inner<'a> {
        #[serde(borrow)]
        name: Str<'a>,
        n: Num,
    }

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Record<'a> {
        #[serde(borrow)]
        s: Str<'a>,
        b: Bool,
        n: Num,
        #[serde(borrow)]
        o: Obj<Inner<'a>>,
        #[serde(borrow)]
        l: ListOr<'a, Obj<Inner<'a>>>,
    }

    fn parse(text: &str) -> Record<'_> {
        serde_json::from_str(text).expect("parses")
    }

    #[test]
    fn expected_shapes_are_read_and_strings_borrowed() {
        let r =
            parse(r#"{"s":"abc","b":true,"n":-3,"o":{"name":"x","n":1.5},"l":[{"name":"y"},7]}"#);
        assert!(matches!(r.s.0, Some(Cow::Borrowed("abc"))));
        assert_eq!(r.b.0, Some(true));
        assert_eq!(r.n.0.and_then(Number::as_i64), Some(-3));
        let inner = r.o.0.expect("object");
        assert_eq!(inner.name.get(), Some("x"));
        assert_eq!(inner.n.0.map(Number::as_f64), Some(1.5));
        match r.l {
            ListOr::List(items) => {
                assert_eq!(items.len(), 2);
                assert_eq!(items[0].0.as_ref().and_then(|i| i.name.get()), Some("y"));
                assert!(items[1].0.is_none());
            }
            other => panic!("expected a list, got {other:?}"),
        }
        // Escapes force a copy, with the same text.
        let r = parse(r#"{"s":"a\nb"}"#);
        assert_eq!(r.s.get(), Some("a\nb"));
    }

    #[test]
    fn every_wrong_shape_is_none_and_consumed() {
        let shapes = [
            "null",
            "true",
            "-1",
            "1e300",
            "\"x\"",
            "[1,[2],{\"a\":[]}]",
            "{\"k\":{\"j\":[1]}}",
        ];
        for shape in shapes {
            let text = format!(r#"{{"s":{shape},"b":{shape},"n":{shape},"o":{shape},"after":1}}"#);
            let r: Record = serde_json::from_str(&text).expect("never fails on a shape");
            if shape != "\"x\"" {
                assert_eq!(r.s.0, None, "{shape}");
            }
            if shape != "true" {
                assert_eq!(r.b.0, None, "{shape}");
            }
            if !shape.starts_with('-') && !shape.starts_with('1') {
                assert_eq!(r.n.0, None, "{shape}");
            }
            if !shape.starts_with('{') {
                assert!(r.o.0.is_none(), "{shape}");
            }
        }
        assert!(matches!(parse(r#"{"l":"text"}"#).l, ListOr::Text(t) if t == "text"));
        assert!(matches!(parse(r#"{"l":null}"#).l, ListOr::Absent));
        assert!(matches!(parse(r#"{"l":{"a":1}}"#).l, ListOr::Other));
        assert!(matches!(parse(r#"{}"#).l, ListOr::Absent));
    }

    #[test]
    fn broken_json_is_still_an_error() {
        assert!(serde_json::from_str::<Record>(r#"{"s":"abc""#).is_err());
        assert!(serde_json::from_str::<Record>(r#"{"o":{"name":}"#).is_err());
    }
}
