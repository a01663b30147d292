//! Tokens of the XDR language (RFC 4506 section 6.2, 6.3), with their positions.

use crate::Error;

/// Where a token starts in its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pos {
    /// Name of the source (a file path, or the name given to an in-memory source).
    pub file: std::rc::Rc<str>,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
}

impl Pos {
    /// An error at this position.
    pub fn err(&self, message: impl Into<String>) -> Error {
        Error {
            file: self.file.to_string(),
            line: self.line,
            col: self.col,
            message: message.into(),
        }
    }
}

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// A decimal, hexadecimal or octal constant, possibly negative.
    Num(i128),
    /// One of `{ } ( ) [ ] < > ; , : = *`.
    Punct(char),
    /// End of the source.
    Eof,
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Num(n) => write!(f, "`{n}`"),
            Tok::Punct(c) => write!(f, "`{c}`"),
            Tok::Eof => write!(f, "end of file"),
        }
    }
}

/// A token and where it starts.
#[derive(Debug, Clone)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its position.
    pub pos: Pos,
}

/// Splits `src` into tokens. Comments (`/* */`, `//`) are skipped, and so is every line whose
/// first non-blank character is `%` (rpcgen pass-through lines, which may appear anywhere,
/// even inside a definition).
pub fn lex(file: &str, src: &str) -> Result<Vec<Token>, Error> {
    let file: std::rc::Rc<str> = file.into();
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut line_start = true;
    let pos = |line: u32, col: u32| Pos {
        file: file.clone(),
        line,
        col,
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            line_start = true;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if line_start && c == '%' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        line_start = false;
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = pos(line, col);
            i += 2;
            col += 2;
            loop {
                match chars.get(i) {
                    None => return Err(start.err("unterminated comment")),
                    Some('*') if chars.get(i + 1) == Some(&'/') => {
                        i += 2;
                        col += 2;
                        break;
                    }
                    Some('\n') => {
                        i += 1;
                        line += 1;
                        col = 1;
                    }
                    Some(_) => {
                        i += 1;
                        col += 1;
                    }
                }
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let here = pos(line, col);
        if c.is_ascii_alphabetic() || c == '_' {
            let s = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            col += (i - s) as u32;
            out.push(Token {
                tok: Tok::Ident(chars[s..i].iter().collect()),
                pos: here,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let s = i;
            let neg = c == '-';
            if neg {
                i += 1;
            }
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let text: String = chars[s..i].iter().collect();
            col += (i - s) as u32;
            let digits = if neg { &text[1..] } else { &text[..] };
            let parsed = if let Some(h) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                i128::from_str_radix(h, 16)
            } else if digits.len() > 1 && digits.starts_with('0') {
                i128::from_str_radix(&digits[1..], 8)
            } else {
                digits.parse::<i128>()
            };
            let v = parsed.map_err(|_| here.err(format!("invalid number `{text}`")))?;
            let v = if neg { -v } else { v };
            if !(-(1i128 << 63)..=(u64::MAX as i128)).contains(&v) {
                return Err(here.err(format!("number `{text}` does not fit in 64 bits")));
            }
            out.push(Token {
                tok: Tok::Num(v),
                pos: here,
            });
            continue;
        }
        if "{}()[]<>;,:=*".contains(c) {
            i += 1;
            col += 1;
            out.push(Token {
                tok: Tok::Punct(c),
                pos: here,
            });
            continue;
        }
        if c == '#' {
            return Err(here.err(
                "preprocessor directive: run the C preprocessor first, or prefix the line with `%`",
            ));
        }
        return Err(here.err(format!("unexpected character `{c}`")));
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: pos(line, col),
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex("t.x", s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_in_every_base() {
        assert_eq!(
            toks("10 0x1F 017 -5 0 0xffffffffffffffff"),
            vec![
                Tok::Num(10),
                Tok::Num(31),
                Tok::Num(15),
                Tok::Num(-5),
                Tok::Num(0),
                Tok::Num(u64::MAX as i128),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn comments_and_pass_through_lines_are_skipped() {
        let t = toks("a /* x\n y */ b // c\n  %#include <x>\n%junk ; {\nd");
        assert_eq!(
            t,
            vec![
                Tok::Ident("a".into()),
                Tok::Ident("b".into()),
                Tok::Ident("d".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn positions_count_lines_and_columns() {
        let t = lex("f.x", "a\n  /* c\n */ bb").unwrap();
        assert_eq!((t[1].pos.line, t[1].pos.col), (3, 5));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = lex("f.x", "a\n b $").unwrap_err();
        assert_eq!(e.to_string(), "f.x:2:4: unexpected character `$`");
        let e = lex("f.x", "\n/* never closed").unwrap_err();
        assert_eq!(e.to_string(), "f.x:2:1: unterminated comment");
        let e = lex("f.x", "0x").unwrap_err();
        assert_eq!(e.to_string(), "f.x:1:1: invalid number `0x`");
        let e = lex("f.x", "#include <a>").unwrap_err();
        assert!(e.to_string().starts_with("f.x:1:1: preprocessor directive"));
    }
}
