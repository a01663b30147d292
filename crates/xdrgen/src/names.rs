//! XDR names to Rust names.

/// Rust keywords (2021 edition, strict and reserved), which need `r#` as field names.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
];

/// Keywords that cannot be raw identifiers.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate"];

/// `open_claim4` → `OpenClaim4`, `OPEN4args` → `Open4args`, `NFS4_OK` → `Nfs4Ok`.
pub fn camel(name: &str) -> String {
    let mut out = String::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            out.extend(c.to_uppercase());
            out.extend(cs.flat_map(|c| c.to_lowercase()));
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'X');
    }
    out
}

/// `na41_flag` → `na41_flag`, `cbSecFlavor` → `cb_sec_flavor`, `type` → `r#type`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    ident(&out)
}

/// Makes `s` usable as a Rust identifier (raw identifier or trailing `_` for keywords).
pub fn ident(s: &str) -> String {
    if NOT_RAW.contains(&s) {
        format!("{s}_")
    } else if KEYWORDS.contains(&s) {
        format!("r#{s}")
    } else {
        s.to_string()
    }
}

/// The name without a raw-identifier prefix (for building other names from it).
pub fn bare(s: &str) -> &str {
    s.strip_prefix("r#").unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_type_names() {
        assert_eq!(camel("open_claim4"), "OpenClaim4");
        assert_eq!(camel("OPEN4args"), "Open4args");
        assert_eq!(camel("nfs_argop4"), "NfsArgop4");
        assert_eq!(camel("NFS4_OK"), "Nfs4Ok");
        assert_eq!(camel("IO_ADVISE_type4"), "IoAdviseType4");
        assert_eq!(camel("_x"), "X");
    }

    #[test]
    fn snake_case_fields_and_keywords() {
        assert_eq!(snake("na41_flag"), "na41_flag");
        assert_eq!(snake("cbSecFlavor"), "cb_sec_flavor");
        assert_eq!(snake("type"), "r#type");
        assert_eq!(snake("match"), "r#match");
        assert_eq!(snake("self"), "self_");
        assert_eq!(bare("r#type"), "type");
    }
}
