//! `next()` of a generator expression whose items call nothing with an
//! effect, written as `next(iter([...]))`: the list is made at once, which
//! gives the same answer when computing an item changes nothing, and Monty
//! runs it (its generator expressions are lists, not iterators). Only the
//! rewritten spans change, and no line is added or removed, so line numbers
//! stay. The differential corpus (tests/differential/laziness.py) holds
//! both engines to the same answer.

use ruff_text_size::TextRange;

/// A generator expression given to `next()`, as written.
pub struct Generator {
    pub range: TextRange,
    /// Written with its own parentheses: `next((x for x in xs), None)`.
    pub parenthesized: bool,
}

/// `code` with each generator written as `iter([...])`; `None` when two
/// overlap (one inside the other) or the source is not as the tree says.
pub fn rewritten(code: &str, mut generators: Vec<Generator>) -> Option<String> {
    generators.sort_by_key(|g| g.range.start());
    let mut out = String::with_capacity(code.len() + 8 * generators.len());
    let mut at = 0usize;
    for generator in &generators {
        let (start, end) = (
            usize::from(generator.range.start()),
            usize::from(generator.range.end()),
        );
        if start < at || end > code.len() {
            return None;
        }
        let text = code.get(start..end)?;
        let inner = if generator.parenthesized {
            text.strip_prefix('(')?.strip_suffix(')')?
        } else {
            text
        };
        out.push_str(code.get(at..start)?);
        out.push_str("iter([");
        out.push_str(inner);
        out.push_str("])");
        at = end;
    }
    out.push_str(code.get(at..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    fn eager(code: &str) -> Option<String> {
        let parsed = ruff_python_parser::parse_module(code).expect("parses");
        super::super::laziness(&parsed.syntax().body, code).eager_equivalent
    }

    #[test]
    fn a_first_match_over_items_without_effects_becomes_a_list() {
        assert_eq!(
            eager("first = next((o['id'] for o in orders if o['ok']), None)\nfirst").as_deref(),
            Some("first = next(iter([o['id'] for o in orders if o['ok']]), None)\nfirst")
        );
        assert_eq!(
            eager("a = next(x for x in xs)\nb = next((y for y in ys), 0)").as_deref(),
            Some("a = next(iter([x for x in xs]))\nb = next(iter([y for y in ys]), 0)")
        );
    }

    #[test]
    fn effects_async_code_and_nesting_are_not_rewritten() {
        for code in [
            "next(fetch(x) for x in xs)",
            "import asyncio\nnext(x for x in xs)",
            "next(next(y for y in ys) for x in xs)",
            "import itertools\nnext(x for x in itertools.count() if x > 3)",
            "next(x for x in xs)\nany(check(x) for x in xs)",
        ] {
            assert_eq!(eager(code), None, "{code}");
        }
    }
}
