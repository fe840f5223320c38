//! The servers part of the description: every server by name with its tool count and what
//! it is for, compacted as the servers grow so that every name fits in the room given.

use super::purpose::Purpose;

/// One server as the description names it.
pub struct Entry<'a> {
    pub name: &'a str,
    pub tools: usize,
    /// `None` for a server whose tools are not known yet (it never listed
    /// them, none are remembered): said the same way whether it is
    /// connecting or failing, so the text does not change with timing.
    pub purpose: Option<&'a Purpose>,
}

impl Entry<'_> {
    fn label(&self) -> String {
        if self.purpose.is_none() {
            format!("{} (not listed yet)", self.name)
        } else {
            format!("{} ({})", self.name, self.tools)
        }
    }
}

/// How much is said per server, from most to least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A line each: `name (tools): purpose`, when every purpose can have at least this
    /// many characters.
    Purposes(usize),
    /// One line: `name (tools), …`.
    Counts,
    /// One line: `name, …`.
    Names,
}

fn intro(entries: &[Entry], total_tools: usize) -> String {
    let servers = entries.len();
    format!(
        "{servers} server{}, {total_tools} tool{}",
        if servers == 1 { "" } else { "s" },
        if total_tools == 1 { "" } else { "s" }
    )
}

/// The servers in `form`, when that fits in `room` characters.
pub fn block(entries: &[Entry], total_tools: usize, form: Form, room: usize) -> Option<String> {
    let text = match form {
        Form::Purposes(min) => purposes(entries, total_tools, room, min)?,
        Form::Counts => {
            let labels: Vec<String> = entries.iter().map(Entry::label).collect();
            format!(
                "{}. Server (tool count): {}",
                intro(entries, total_tools),
                labels.join(", ")
            )
        }
        Form::Names => {
            let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
            format!("{}: {}", intro(entries, total_tools), names.join(", "))
        }
    };
    (text.chars().count() <= room).then_some(text)
}

/// A line per server; the room left after the names is shared out evenly, what a short
/// purpose leaves going to the longer ones.
fn purposes(entries: &[Entry], total_tools: usize, room: usize, min: usize) -> Option<String> {
    let head = format!(
        "{}. Server (tool count): what it is for",
        intro(entries, total_tools)
    );
    let labels: Vec<String> = entries.iter().map(Entry::label).collect();
    let fixed: usize = head.chars().count()
        + labels
            .iter()
            .zip(entries)
            .map(|(l, e)| 1 + l.chars().count() + if e.purpose.is_some() { 2 } else { 0 })
            .sum::<usize>();
    let mut left = room.checked_sub(fixed)?;
    let with_purpose: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].purpose.is_some())
        .collect();
    if with_purpose.is_empty() {
        return Some(format!("{head}\n{}", labels.join("\n")));
    }
    if left / with_purpose.len() < min {
        return None;
    }
    let mut order = with_purpose;
    order.sort_by_key(|&i| (entries[i].purpose.map_or(0, Purpose::len), i));
    let mut texts: Vec<String> = vec![String::new(); entries.len()];
    for (k, &i) in order.iter().enumerate() {
        let share = left / (order.len() - k);
        let text = entries[i].purpose.map(|p| p.fit(share)).unwrap_or_default();
        left -= text.chars().count();
        texts[i] = text;
    }
    let lines: Vec<String> = labels
        .iter()
        .zip(&texts)
        .map(|(label, text)| {
            if text.is_empty() {
                label.clone()
            } else {
                format!("{label}: {text}")
            }
        })
        .collect();
    Some(format!("{head}\n{}", lines.join("\n")))
}

/// As many names as fit in `room`, then how many more there are: for more servers than any
/// client shows.
pub fn names_cut(entries: &[Entry], total_tools: usize, room: usize) -> String {
    let mut out = format!("{}: ", intro(entries, total_tools));
    for (i, e) in entries.iter().enumerate() {
        let more = format!("… and {} more", entries.len() - i);
        let sep = if i == 0 { "" } else { ", " };
        if out.chars().count() + sep.len() + e.name.chars().count() + 2 + more.len() > room {
            out.push_str(sep);
            out.push_str(&more);
            return out;
        }
        out.push_str(sep);
        out.push_str(e.name);
    }
    out
}
