//! PTX lexer: turns source text into tokens with 1-based line/column, so every later error can
//! point at the exact place in the PTX.
//!
//! Words keep their dots (`ld.global.nc.f32`, `%tid.x`, `.reg`) because in PTX a dot always glues
//! modifiers to the word before it; the parser splits them where it needs to.

use crate::error::EmuError;

/// One lexical token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tok<'a> {
    /// Identifier, opcode with modifiers, directive (`.reg`) or register (`%r1`).
    Word(&'a str),
    /// Integer literal (decimal, hex, octal, binary); negative numbers come as `Punct('-')` + Int.
    Int(u64),
    /// `0fXXXXXXXX` single-precision bit pattern.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` double-precision bit pattern, or a decimal float literal.
    F64(u64),
    Str(&'a str),
    Punct(char),
}

/// A token and where it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Tokenizes a whole PTX module.
pub(crate) fn lex(src: &str) -> Result<Vec<Token<'_>>, EmuError> {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4);
    let (mut i, mut line, mut line_start) = (0usize, 1u32, 0usize);
    while i < b.len() {
        let c = b[i];
        let col = (i - line_start + 1) as u32;
        let (l0, c0) = (line, col);
        let err = move |msg: String| EmuError::Parse {
            line: l0,
            col: c0,
            msg,
        };
        match c {
            b'\n' => {
                i += 1;
                line += 1;
                line_start = i;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                loop {
                    if i + 1 >= b.len() {
                        return Err(err("unterminated block comment".into()));
                    }
                    if b[i] == b'\n' {
                        line += 1;
                        line_start = i + 1;
                    }
                    if b[i] == b'*' && b[i + 1] == b'/' {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\n' {
                        return Err(err("unterminated string".into()));
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return Err(err("unterminated string".into()));
                }
                out.push(Token {
                    tok: Tok::Str(&src[start..i]),
                    line,
                    col,
                });
                i += 1;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    // a '.' only belongs to a decimal float literal
                    if b[i] == b'.' && !b[start..i].iter().all(u8::is_ascii_digit) {
                        break;
                    }
                    i += 1;
                }
                // exponent sign of a decimal float, e.g. 1.5e-3
                if i < b.len()
                    && (b[i] == b'-' || b[i] == b'+')
                    && i > start
                    && (b[i - 1] == b'e' || b[i - 1] == b'E')
                    && !src[start..i].starts_with("0x")
                {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                let text = &src[start..i];
                let tok = number(text).ok_or_else(|| err(format!("bad number '{text}'")))?;
                out.push(Token { tok, line, col });
            }
            c if is_word_start(c) => {
                let start = i;
                i += 1;
                loop {
                    while i < b.len() && is_word_char(b[i]) {
                        i += 1;
                    }
                    // Cache-hint qualifiers glue to the opcode with `::`
                    // (`prefetch.global.L2::evict_last`, `ld.global.L1::no_allocate.f32`).
                    if b.get(i) == Some(&b':')
                        && b.get(i + 1) == Some(&b':')
                        && b.get(i + 2).is_some_and(|&c| is_word_char(c))
                    {
                        i += 2;
                    } else {
                        break;
                    }
                }
                out.push(Token {
                    tok: Tok::Word(&src[start..i]),
                    line,
                    col,
                });
            }
            b'{' | b'}' | b'(' | b')' | b'[' | b']' | b',' | b';' | b':' | b'+' | b'-' | b'<'
            | b'>' | b'@' | b'!' | b'|' | b'=' | b'*' => {
                out.push(Token {
                    tok: Tok::Punct(c as char),
                    line,
                    col,
                });
                i += 1;
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(err(format!("unexpected character '{ch}'")));
            }
        }
    }
    Ok(out)
}

fn number(text: &str) -> Option<Tok<'_>> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    if let Some(h) = t.strip_prefix("0f").or_else(|| t.strip_prefix("0F"))
        && h.len() == 8
    {
        return u32::from_str_radix(h, 16).ok().map(Tok::F32);
    }
    if let Some(h) = t.strip_prefix("0d").or_else(|| t.strip_prefix("0D"))
        && h.len() == 16
    {
        return u64::from_str_radix(h, 16).ok().map(Tok::F64);
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(Tok::Int);
    }
    if let Some(h) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        return u64::from_str_radix(h, 2).ok().map(Tok::Int);
    }
    if t.contains(['.', 'e', 'E']) {
        return t.parse::<f64>().ok().map(|f| Tok::F64(f.to_bits()));
    }
    if t.len() > 1 && t.starts_with('0') {
        return u64::from_str_radix(&t[1..], 8).ok().map(Tok::Int);
    }
    t.parse::<u64>().ok().map(Tok::Int)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_numbers_and_positions() {
        let t =
            lex("ld.global.f32 %f1, [%rd2+-4];\n  mov.f32 %f2, 0f3F800000; // c\n x 0x10 7 1.5")
                .unwrap();
        assert_eq!(t[0].tok, Tok::Word("ld.global.f32"));
        assert!(
            t.iter()
                .any(|x| x.tok == Tok::F32(0x3F80_0000) && x.line == 2)
        );
        let last = t.last().unwrap();
        assert_eq!(last.tok, Tok::F64(1.5f64.to_bits()));
        assert_eq!((last.line, last.col), (3, 11));
        assert!(t.iter().any(|x| x.tok == Tok::Int(16)));
    }

    #[test]
    fn cache_hint_qualifiers_stay_in_the_opcode() {
        let t = lex("prefetch.global.L2::evict_last [%rd1];\n$L__BB0_2:").unwrap();
        assert_eq!(t[0].tok, Tok::Word("prefetch.global.L2::evict_last"));
        // a label's single ':' is still punctuation
        assert_eq!(t[t.len() - 1].tok, Tok::Punct(':'));
        assert_eq!(t[t.len() - 2].tok, Tok::Word("$L__BB0_2"));
    }

    #[test]
    fn bad_character_has_position() {
        match lex("add\n  #") {
            Err(EmuError::Parse { line, col, .. }) => assert_eq!((line, col), (2, 3)),
            other => panic!("expected parse error, got {other:?}"),
        }
    }
}
