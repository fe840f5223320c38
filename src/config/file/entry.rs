//! One server entry as the file holds it: its `"policy"` read as [`Rules`]
//! (so that a malformed one is an error with its position), everything else
//! kept as a `Value` for `build` to judge.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use codemcp_sdk::policy::Rules;

/// One server entry: its `"policy"` as [`Rules`], everything else as a `Value`.
pub(super) struct Entry {
    pub value: Value,
    pub policy: Rules,
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl EntryVisitor {
    fn plain(value: Value) -> Entry {
        Entry {
            value,
            policy: Rules::default(),
        }
    }
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a server entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut fields = Map::new();
        let mut policy = Rules::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "policy" {
                policy = map.next_value::<Option<Rules>>()?.unwrap_or_default();
            } else {
                fields.insert(key, map.next_value()?);
            }
        }
        Ok(Entry {
            value: Value::Object(fields),
            policy,
        })
    }

    // Any other value is kept as it is, for `build` to refuse with a reason.
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Self::plain(Value::Array(items)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Entry, E> {
        Ok(Self::plain(Value::String(v.to_owned())))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Entry, E> {
        Ok(Self::plain(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Entry, E> {
        Ok(Self::plain(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Entry, E> {
        Ok(Self::plain(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Entry, E> {
        Ok(Self::plain(Value::from(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Entry, E> {
        Ok(Self::plain(Value::Null))
    }
}
