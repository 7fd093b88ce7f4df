//! A JSON Schema (schemars' `RootSchema`, derived from a file's Rust types) as Markdown: the root
//! type's table, then each type it names, in the order the fields first name them. An object is a
//! table of its fields (type, whether it is required, meaning); an enum a table of its values.

use crate::markdown::{anchor, cell, code, table};
use schemars::Map;
use schemars::schema::{InstanceType, RootSchema, Schema, SchemaObject, SingleOrVec};
use serde_json::Value;

/// How a file spells a value that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absent {
    /// JSON: `null` (or the key left out, where the field is not required).
    Null,
    /// TOML, which has no `null`: the key is left out.
    Omitted,
}

/// The types a schema describes, rendered as `###` sections: the root (titled `root_title`)
/// first.
pub fn sections(root: &RootSchema, root_title: &str, absent: Absent) -> String {
    let defs = &root.definitions;
    let mut order: Vec<&str> = Vec::new();
    let mut out = section(root_title, &root.schema, defs, &mut order, absent);
    let mut i = 0;
    while let Some(name) = order.get(i).copied() {
        if let Some(Schema::Object(def)) = defs.get(name) {
            out.push('\n');
            out.push_str(&section(name, def, defs, &mut order, absent));
        }
        i += 1;
    }
    out
}

/// One type's section; notes in `order` the definitions its fields name.
fn section<'a>(
    title: &str,
    s: &SchemaObject,
    defs: &'a Map<String, Schema>,
    order: &mut Vec<&'a str>,
    absent: Absent,
) -> String {
    let mut out = format!("### {title}\n\n");
    if let Some(d) = description(s) {
        out.push_str(&format!("{}\n\n", d.trim()));
    }
    if let Some(values) = enum_values(s) {
        let rows: Vec<Vec<String>> = values
            .into_iter()
            .map(|(v, d)| vec![code(&v), d.as_deref().map(cell).unwrap_or_default()])
            .collect();
        out.push_str(&table(&["value", "meaning"], &rows));
        return out;
    }
    let Some(obj) = &s.object else {
        out.push_str(&format!(
            "Type: {}.\n",
            type_of(&Schema::Object(s.clone()), defs)
        ));
        return out;
    };
    let rows: Vec<Vec<String>> = obj
        .properties
        .iter()
        .map(|(name, field)| {
            collect_refs(field, defs, order);
            let mut meaning = match field {
                Schema::Object(f) => description(f).as_deref().map(cell).unwrap_or_default(),
                Schema::Bool(_) => String::new(),
            };
            if let Some(default) = default_of(field) {
                meaning.push_str(&format!(" Default: `{default}`."));
            }
            let mut kind = type_of(field, defs);
            if absent == Absent::Omitted {
                kind = kind.replace(" or null", "");
            }
            vec![
                code(name),
                kind,
                if obj.required.contains(name) {
                    "yes"
                } else {
                    "no"
                }
                .to_string(),
                meaning.trim().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(&["field", "type", "required", "meaning"], &rows));
    out
}

/// A schema's description: its doc comment. (Its title is the type's name, which the section's
/// heading already says.)
pub(crate) fn description(s: &SchemaObject) -> Option<String> {
    s.metadata.as_ref()?.description.clone()
}

/// A default worth stating in a cell: a number, string or boolean (a section's defaults are
/// its fields').
fn default_of(s: &Schema) -> Option<String> {
    let Schema::Object(o) = s else { return None };
    let d = o.metadata.as_ref()?.default.as_ref()?;
    match d {
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        v => Some(v.to_string()),
    }
}

/// The values of a string enum with their meanings: `enum` alone, or one constant per `oneOf`
/// branch (schemars' form for variants with doc comments).
fn enum_values(s: &SchemaObject) -> Option<Vec<(String, Option<String>)>> {
    let plain = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(values) = &s.enum_values {
        return Some(values.iter().map(|v| (plain(v), None)).collect());
    }
    let branches = s.subschemas.as_ref()?.one_of.as_ref()?;
    branches
        .iter()
        .map(|b| match b {
            Schema::Object(o) => match o.enum_values.as_deref() {
                Some([v]) => Some((plain(v), description(o))),
                _ => None,
            },
            Schema::Bool(_) => None,
        })
        .collect()
}

/// Notes the definitions a field names, in order of first appearance.
fn collect_refs<'a>(s: &Schema, defs: &'a Map<String, Schema>, order: &mut Vec<&'a str>) {
    let Schema::Object(o) = s else { return };
    if let Some(r) = &o.reference
        && let Some((name, _)) = defs.get_key_value(ref_name(r))
        && !order.contains(&name.as_str())
    {
        order.push(name);
    }
    if let Some(sub) = &o.subschemas {
        for list in [&sub.all_of, &sub.any_of, &sub.one_of]
            .into_iter()
            .flatten()
        {
            list.iter().for_each(|b| collect_refs(b, defs, order));
        }
    }
    match o.array.as_ref().and_then(|a| a.items.as_ref()) {
        Some(SingleOrVec::Single(i)) => collect_refs(i, defs, order),
        Some(SingleOrVec::Vec(v)) => v.iter().for_each(|i| collect_refs(i, defs, order)),
        None => {}
    }
    if let Some(extra) = (o.object.as_ref()).and_then(|x| x.additional_properties.as_ref()) {
        collect_refs(extra, defs, order);
    }
}

fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

/// A field's type in words: `integer (u32)`, `string or null`, a link to a named type, ….
pub(crate) fn type_of(s: &Schema, defs: &Map<String, Schema>) -> String {
    let o = match s {
        Schema::Bool(true) => return "any JSON value".into(),
        Schema::Bool(false) => return "nothing".into(),
        Schema::Object(o) => o,
    };
    if let Some(r) = &o.reference {
        let name = ref_name(r);
        return format!("[{name}](#{})", anchor(name));
    }
    if let Some(values) = enum_values(o) {
        let values: Vec<String> = values.iter().map(|(v, _)| code(v)).collect();
        return format!("one of {}", values.join(", "));
    }
    let branches = (o.subschemas.as_ref()).and_then(|sub| {
        [&sub.all_of, &sub.any_of, &sub.one_of]
            .into_iter()
            .flatten()
            .next()
    });
    if let Some(list) = branches {
        let types: Vec<String> = list.iter().map(|b| type_of(b, defs)).collect();
        return types.join(" or ");
    }
    let Some(types) = &o.instance_type else {
        return "any JSON value".into();
    };
    let types: Vec<InstanceType> = match types {
        SingleOrVec::Single(t) => vec![**t],
        SingleOrVec::Vec(v) => v.clone(),
    };
    let words: Vec<String> = types.iter().map(|t| instance(*t, o, defs)).collect();
    words.join(" or ")
}

fn instance(t: InstanceType, o: &SchemaObject, defs: &Map<String, Schema>) -> String {
    match t {
        InstanceType::Null => "null".into(),
        InstanceType::Boolean => "boolean".into(),
        InstanceType::String => "string".into(),
        InstanceType::Integer | InstanceType::Number => {
            let word = if t == InstanceType::Integer {
                "integer"
            } else {
                "number"
            };
            match o.format.as_deref().map(rust_type) {
                Some(f) => format!("{word} ({f})"),
                None => word.into(),
            }
        }
        InstanceType::Array => {
            let a = o.array.as_deref();
            let item = match a.and_then(|a| a.items.as_ref()) {
                Some(SingleOrVec::Single(i)) => type_of(i, defs),
                _ => "any JSON value".into(),
            };
            match a.map(|a| (a.min_items, a.max_items)) {
                Some((Some(lo), Some(hi))) if lo == hi => format!("array of {lo} × {item}"),
                _ => format!("array of {item}"),
            }
        }
        InstanceType::Object => match o
            .object
            .as_ref()
            .and_then(|x| x.additional_properties.as_ref())
        {
            Some(v) => format!("map of string to {}", type_of(v, defs)),
            None => "object".into(),
        },
    }
}

/// A JSON Schema `format` as the Rust type it stands for (which says the range).
fn rust_type(format: &str) -> &str {
    match format {
        "uint8" => "u8",
        "uint16" => "u16",
        "uint32" => "u32",
        "uint64" => "u64",
        "uint" => "usize",
        "int8" => "i8",
        "int16" => "i16",
        "int32" => "i32",
        "int64" => "i64",
        "float" => "f32",
        "double" => "f64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use std::collections::BTreeMap;

    /// Which way.
    #[derive(JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Way {
        /// Up it goes.
        Up,
        Down,
    }

    /// A part.
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Part {
        /// How many.
        count: Option<u32>,
    }

    /// The root.
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Root {
        /// A | b.
        name: String,
        part: Option<Part>,
        way: Way,
        sizes: [u64; 3],
        table: BTreeMap<String, f64>,
        #[serde(default = "yes")]
        flag: bool,
    }

    fn yes() -> bool {
        true
    }

    #[test]
    fn a_schema_renders_its_root_then_each_named_type_in_field_order() {
        let md = sections(&schemars::schema_for!(Root), "root", Absent::Null);
        let toml = sections(&schemars::schema_for!(Root), "root", Absent::Omitted);
        assert!(toml.contains("| `part` | [Part](#part) | no |"), "{toml}");
        let root = md.find("### root").unwrap();
        let part = md.find("### Part").unwrap();
        let way = md.find("### Way").unwrap();
        assert!(root < part && part < way, "{md}");
        assert!(md.contains("| `name` | string | yes | A \\| b. |"), "{md}");
        assert!(
            md.contains("| `part` | [Part](#part) or null | no |"),
            "{md}"
        );
        assert!(
            md.contains("| `sizes` | array of 3 × integer (u64) | yes |"),
            "{md}"
        );
        assert!(
            md.contains("| `table` | map of string to number (f64) |"),
            "{md}"
        );
        assert!(
            md.contains("| `flag` | boolean | no | Default: `true`. |"),
            "{md}"
        );
        assert!(
            md.contains("| `count` | integer (u32) or null | no | How many. |"),
            "{md}"
        );
        assert!(md.contains("| `up` | Up it goes. |"), "{md}");
        assert!(md.contains("| `down` |  |"), "{md}");
    }
}
