//! An XDR-language (RFC 4506 section 6) to Rust generator for the rnfs `xdr` crate.
//!
//! [`Generator`] reads `.x` specifications and returns Rust source, meant to be written to
//! `OUT_DIR` by a build script and `include!`d:
//!
//! ```no_run
//! let src = xdrgen::Generator::new()
//!     .open_enum("nfsstat4")
//!     .max_opaque(1 << 20)
//!     .generate(&["spec/nfs4_prot.x"])
//!     .expect("valid XDR");
//! # let _ = src;
//! ```
//!
//! # What is accepted
//!
//! `const`, `typedef`, `enum`, `struct`, `union switch` (several `case` labels may share an
//! arm, arms may be `void`, `default` is optional), optional data (`T *x`), fixed arrays
//! (`T x[N]`), variable arrays (`T x<N>`, `T x<>`), `opaque x[N]`, `opaque x<N>`,
//! `opaque x<>`, `string x<N>`, `string x<>`, `int`, `unsigned int` (and bare `unsigned`),
//! `hyper`, `unsigned hyper`, `bool`, inline `enum`/`struct`/`union` types (hoisted to named
//! types called `parent_field`), comments (`/* */`, `//`), `%` pass-through lines (ignored,
//! wherever they appear) and `program`/`version` blocks, which become constants for the
//! program, version and procedure numbers. `int32_t`, `uint32_t`, `int64_t` and `uint64_t`
//! are understood as the C typedefs RFC 7863 assumes, and so are `u_int32_t` and `u_int64_t`,
//! the BSD spellings of `uint32_t` and `uint64_t` that FreeBSD's rpcsvc files use
//! (`nlm_prot.x`); rpcgen's `long` and `unsigned long` (RFC 1813's `int32` and `uint32`) as
//! `int` and `unsigned int`; `struct name`, `enum name`
//! and `union name` name a type (`typedef struct mountbody *mountlist;`). `float`, `double` and `quadruple` are
//! rejected. Errors name the file, line and column.
//!
//! # What is generated
//!
//! * structs → Rust structs (CamelCase names, snake_case fields, raw identifiers for
//!   keywords); unions → Rust enums with one variant per case label (so every value encodes
//!   back to the discriminant it was decoded from), plus `Default(discriminant[, value])` for a
//!   `default` arm and a `discriminant()` method; enums → `#[repr(i32)]` Rust enums whose
//!   unknown values are a decoding error, or, for the names given to
//!   [`Generator::open_enum`], `struct X(pub u32)` with one associated constant per value, so
//!   unknown numbers are carried; typedefs → type aliases; constants → `pub const`.
//! * `xdr::Decode` and `xdr::Encode` for every struct, union and enum. Variable-length
//!   opaque data and strings decode as `bytes::Bytes` slices of the receive buffer (no copy,
//!   no UTF-8 check). Fixed-length opaque data of at most [`Generator::fixed_opaque_inline_max`]
//!   bytes (default 64) decodes into a `[u8; N]`; longer ones are `Bytes` too.
//! * Every length read from the wire is checked against its bound before anything is
//!   allocated: the `.x` bound, or for `<>` the default of [`Generator::max_opaque`] (bytes)
//!   or [`Generator::max_array`] (elements), or a per-name override from
//!   [`Generator::bound`]; arrays are also checked against the bytes left, given each
//!   element's minimum encoded size (the `xdr` crate's bounded helpers do both).
//! * Recursive types: optional data that leads back to its own type is boxed. A linked list
//!   (`struct S { ...; S *next; }`) is decoded, encoded, cloned, compared, printed and
//!   dropped iteratively, with at most `max_array` (or `bound("S", n)`) nodes; any other
//!   recursion is decoded with a depth bound ([`Generator::max_depth`]). Both limits fail
//!   with `XdrError::TooLong`.
//! * Representation settings, each for named types: [`Generator::vec_list`] (a linked list as
//!   a `Vec`, same encoding), [`Generator::option_union`] (a `bool`-switched union with one
//!   void arm as `struct X(pub Option<T>)`), [`Generator::newtype`] (a typedef as a type of
//!   its own, with a codec) and [`Generator::variant_name`] (union arms named after their
//!   meaning, such as `Ok` and `Fail` for status-switched results).
//! * Optionally ([`Generator::proptest`]) `proptest` strategies and `Arbitrary` impls, in
//!   `#[cfg(test)]` code, for round-trip tests in the crate that includes the output.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ast;
mod codegen;
mod lexer;
mod model;
mod names;
mod parser;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A problem in a specification, or in the generator's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The source it is in (empty for a settings error).
    pub file: String,
    /// Line, from 1 (0 when there is no position).
    pub line: u32,
    /// Column, from 1 (0 when there is no position).
    pub col: u32,
    /// What is wrong.
    pub message: String,
}

impl Error {
    fn config(message: String) -> Self {
        Error {
            file: String::new(),
            line: 0,
            col: 0,
            message,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, _) => f.write_str(&self.message),
            (false, 0) => write!(f, "{}: {}", self.file, self.message),
            (false, _) => write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Settings and inputs of one generation run; see the crate documentation.
#[derive(Debug, Clone)]
pub struct Generator {
    open_enums: Vec<String>,
    renames: Vec<(String, String, String)>,
    cfg: codegen::Config,
    extensions: Vec<(String, bool, String)>,
    sources: Vec<(String, String)>,
}

impl Default for Generator {
    fn default() -> Self {
        Self::new()
    }
}

impl Generator {
    /// Defaults: 1 MiB for unbounded opaque data and strings, 1024 elements for unbounded
    /// arrays and linked lists, nesting depth 64, fixed opaque data up to 64 bytes inline,
    /// no proptest strategies.
    pub fn new() -> Self {
        Generator {
            open_enums: Vec::new(),
            renames: Vec::new(),
            cfg: codegen::Config {
                max_opaque: 1 << 20,
                max_array: 1024,
                max_depth: 64,
                bounds: BTreeMap::new(),
                payload: BTreeSet::new(),
                body_payload: BTreeSet::new(),
                bulk: BTreeSet::new(),
                inline_max: 64,
                proptest: false,
                arbitrary_depth: 3,
                vec_lists: BTreeSet::new(),
                option_unions: BTreeSet::new(),
                newtypes: BTreeSet::new(),
            },
            extensions: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// Makes the enum `name` open: it decodes to `struct Name(pub u32)` and keeps values the
    /// specification does not list.
    pub fn open_enum(mut self, name: &str) -> Self {
        self.open_enums.push(name.to_string());
        self
    }

    /// Maximum length of `opaque x<>` and `string x<>` without a bound of their own.
    pub fn max_opaque(mut self, bytes: usize) -> Self {
        self.cfg.max_opaque = bytes;
        self
    }

    /// Maximum element count of `T x<>` without a bound of its own, and of linked lists.
    pub fn max_array(mut self, elements: usize) -> Self {
        self.cfg.max_array = elements;
        self
    }

    /// Maximum nesting depth of recursive types other than linked lists.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.cfg.max_depth = depth;
        self
    }

    /// Sets the maximum length (bytes or elements) of the variable-length items reached
    /// through a name: a typedef (`"utf8string"`: wherever it is used, directly or through
    /// other typedefs), a linked-list struct (`"entry4"`: its node count), or one struct or
    /// union field (`"WRITE4args.data"`). A field's setting wins over a typedef's, and an
    /// outer typedef's over the typedef it names. A bound written in the `.x` can only be
    /// lowered this way, never raised.
    pub fn bound(mut self, name: &str, max: usize) -> Self {
        self.cfg.bounds.insert(name.to_string(), max);
        self
    }

    /// Makes the `opaque x<>` field `"type.field"` an `xdr::Payload`, encoded with
    /// `Encoder::opaque_payload` (a separate segment, or file pages), for bulk data such as
    /// READ results.
    pub fn payload(mut self, field: &str) -> Self {
        self.cfg.payload.insert(field.to_string());
        self
    }

    /// Like [`Generator::payload`], but the field is not DDP-eligible (RFC 8267: an NFSv4.2
    /// READ_PLUS result's data): encoded with `Encoder::opaque_body_payload`, so that an
    /// RPC-over-RDMA transport never places it in a Write chunk, while a stream transport
    /// still sends its file pages without a copy.
    pub fn body_payload(mut self, field: &str) -> Self {
        self.cfg.payload.insert(field.to_string());
        self.cfg.body_payload.insert(field.to_string());
        self
    }

    /// Encodes the `opaque x<>` field `"type.field"` with `Encoder::opaque_bulk` (its bytes
    /// stay a separate segment instead of being copied).
    pub fn bulk(mut self, field: &str) -> Self {
        self.cfg.bulk.insert(field.to_string());
        self
    }

    /// Fixed-length opaque data up to this many bytes becomes `[u8; N]`; longer is `Bytes`.
    pub fn fixed_opaque_inline_max(mut self, bytes: u32) -> Self {
        self.cfg.inline_max = bytes;
        self
    }

    /// Also emits `#[cfg(test)]` proptest strategies (module `arbitrary`) and `Arbitrary`
    /// impls; the including crate needs `proptest` as a dev-dependency.
    pub fn proptest(mut self, on: bool) -> Self {
        self.cfg.proptest = on;
        self
    }

    /// Makes the linked list `struct name { ...; name *next; }` (the tail may also be a
    /// typedef of `name *`, as in `typedef struct name *list;`) a `Vec`: every `name *x` (and
    /// every typedef of it) becomes `Vec<Name>`, and `Name` loses its tail field. The encoding
    /// is unchanged (TRUE before each node, FALSE after the last); the node count is bounded as
    /// for other lists. Code that builds or reads long lists (directory listings) then pushes
    /// to and iterates a `Vec`, with no allocation per node and no recursion to undo on drop.
    /// `name` may then only be used behind `*`.
    pub fn vec_list(mut self, name: &str) -> Self {
        self.cfg.vec_lists.insert(name.to_string());
        self
    }

    /// Makes the union `name`, which must be `switch (bool b) { case TRUE: T v; case FALSE:
    /// void; }` (or `default: void;` for the FALSE arm), a `struct Name(pub Option<T>)` with
    /// `Default` (`None`): optional data spelt as a union, such as NFSv3's `post_op_attr`.
    pub fn option_union(mut self, name: &str) -> Self {
        self.cfg.option_unions.insert(name.to_string());
        self
    }

    /// Makes the typedef `name` a type of its own (`struct Name(pub T)`, with `Decode` and
    /// `Encode`) instead of an alias, so that a bare typedef (a procedure's argument such as
    /// MOUNT's `dirpath`, or a result such as `exports`) can be decoded and encoded with its
    /// bounds. Bounds set for `name` apply inside it.
    pub fn newtype(mut self, name: &str) -> Self {
        self.cfg.newtypes.insert(name.to_string());
        self
    }

    /// In every union switching on the enum `discriminant`, names the Rust variant of the arm
    /// for `label` (an item of the enum, matched by value, or `"default"`) `variant`: for
    /// example `("nfsstat3", "NFS3_OK", "Ok")` and `("nfsstat3", "default", "Fail")` give every
    /// NFSv3 result union the variants `Ok(..)` and `Fail(status, ..)`.
    pub fn variant_name(mut self, discriminant: &str, label: &str, variant: &str) -> Self {
        self.renames.push((
            discriminant.to_string(),
            label.to_string(),
            variant.to_string(),
        ));
        self
    }

    /// Adds enum items, written as in an enum body (`"A = 1, B = 2"`), to the enum `name`
    /// (for extensions such as RFC 8276's additions to `nfs_opnum4`).
    pub fn extend_enum(mut self, name: &str, items: &str) -> Self {
        self.extensions
            .push((name.to_string(), false, items.to_string()));
        self
    }

    /// Adds union arms, written as in a union body (`"case A: T a; case B: void;"`), to the
    /// union `name`.
    pub fn extend_union(mut self, name: &str, arms: &str) -> Self {
        self.extensions
            .push((name.to_string(), true, arms.to_string()));
        self
    }

    /// Adds an in-memory specification, read after the files given to [`Generator::generate`].
    pub fn source(mut self, name: &str, text: &str) -> Self {
        self.sources.push((name.to_string(), text.to_string()));
        self
    }

    /// Reads the `.x` files (then the in-memory sources) as one specification and returns
    /// the generated Rust source.
    pub fn generate<P: AsRef<Path>>(&self, paths: &[P]) -> Result<String, Error> {
        let mut all = Vec::new();
        for p in paths {
            let p = p.as_ref();
            let text = std::fs::read_to_string(p).map_err(|e| Error {
                file: p.display().to_string(),
                line: 0,
                col: 0,
                message: format!("cannot read: {e}"),
            })?;
            all.push((p.display().to_string(), text));
        }
        all.extend(self.sources.iter().cloned());
        let mut defs = Vec::new();
        for (name, text) in &all {
            defs.extend(parser::parse(lexer::lex(name, text)?)?);
        }
        let mut exts = Vec::new();
        for (i, (name, union, text)) in self.extensions.iter().enumerate() {
            let src = format!(
                "<{} {i}: {name}>",
                if *union {
                    "extend_union"
                } else {
                    "extend_enum"
                }
            );
            let toks = lexer::lex(&src, text)?;
            exts.push(if *union {
                model::Extension::Union(name.clone(), parser::parse_union_arms(toks)?)
            } else {
                model::Extension::Enum(name.clone(), parser::parse_enum_items(toks)?)
            });
        }
        let mut m = model::build(defs, &exts, &self.open_enums)?;
        model::rename_variants(&mut m, &self.renames)?;
        let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
        codegen::generate(&m, &self.cfg, &names)
    }

    /// Generates from in-memory sources only.
    pub fn generate_sources(&self) -> Result<String, Error> {
        self.generate::<&Path>(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(src: &str) -> Result<String, Error> {
        Generator::new().source("t.x", src).generate_sources()
    }

    fn err(src: &str) -> String {
        gen(src).unwrap_err().to_string()
    }

    #[test]
    fn semantic_errors_name_line_and_column() {
        assert_eq!(err("typedef foo bar;"), "t.x:1:9: undefined type `foo`");
        assert_eq!(
            err("struct a { int x; };\nstruct a { int y; };"),
            "t.x:2:8: type `a` is already defined at t.x:1:8"
        );
        assert_eq!(
            err("const A = 1;\nenum e { A = 2 };"),
            "t.x:2:10: `A` is already defined at t.x:1:7"
        );
        assert_eq!(
            err("typedef opaque o<MAX>;"),
            "t.x:1:18: undefined constant `MAX`"
        );
        assert_eq!(
            err("const A = B;\nconst B = A;"),
            "t.x:1:11: constant `B` is defined in terms of itself"
        );
        assert_eq!(
            err("typedef int x[-1];"),
            "t.x:1:15: array size -1 is not between 0 and 2^32-1"
        );
        assert_eq!(
            err("enum e { A = 1 };\nunion u switch (e d) {\n case 2: void;\n};"),
            "t.x:3:7: case `2` is not a value of enum `e`"
        );
        assert_eq!(
            err("union u switch (int d) {\n case 1: void;\n case 1: int x;\n};"),
            "t.x:3:7: case `1` repeats the value 1 of case `1` in union `u`"
        );
        assert_eq!(
            err("union u switch (hyper d) { case 1: void; };"),
            "t.x:1:17: a union discriminant must be int, unsigned int, bool or an enum"
        );
        assert_eq!(
            err("union u switch (bool d) { case 2: void; };"),
            "t.x:1:32: case `2` is not a bool (TRUE or FALSE)"
        );
        assert_eq!(
            err("struct s {\n int v;\n s inner;\n};"),
            "t.x:1:8: `s` contains itself (through `s`) other than behind `*` or `<>`: it would be infinitely large"
        );
        assert_eq!(
            err("enum e { A = 1, B = 1 };"),
            "t.x:1:17: `B` has the same value (1) as `A`; make `e` an open enum to allow that"
        );
        assert_eq!(
            err("struct foo_bar { int x; };\nstruct FOO_BAR { int y; };"),
            "t.x:2:8: `FOO_BAR` and `foo_bar` (at t.x:1) both become the Rust type `FooBar`"
        );
        assert_eq!(
            err("struct s { int aB; int a_b; };"),
            "t.x:1:8: `aB` and `a_b` both become the Rust field `a_b`"
        );
        assert_eq!(
            err("program P { version V { void N(void) = 0; nope G(int) = 1; } = 1; } = 9;"),
            "t.x:1:43: undefined type `nope`"
        );
    }

    #[test]
    fn settings_errors() {
        let g = Generator::new().source("t.x", "struct s { int x; opaque o<>; };");
        let e = g.clone().bound("nope", 1).generate_sources().unwrap_err();
        assert_eq!(
            e.to_string(),
            "bound(\"nope\"): no type, and no struct or union field (`type.field`), of that name"
        );
        let e = g.clone().open_enum("s").generate_sources().unwrap_err();
        assert_eq!(e.to_string(), "open_enum(\"s\"): no enum of that name");
        let e = g.clone().payload("s.x").generate_sources().unwrap_err();
        assert!(e
            .to_string()
            .starts_with("payload/bulk(\"s.x\"): not a `type.field`"));
        assert!(g.clone().payload("s.o").generate_sources().is_ok());
        let e = g
            .clone()
            .extend_union("s", "case 1: void;")
            .generate_sources()
            .unwrap_err();
        assert_eq!(e.to_string(), "extend_union(\"s\"): no union of that name");
        let e = g
            .clone()
            .extend_enum("e", "A = ")
            .generate_sources()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "<extend_enum 0: e>:1:5: expected a constant or a constant's name, found end of file"
        );
        let e = Generator::new()
            .generate(&["/nonexistent/x.x"])
            .unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.x: cannot read"));
    }

    #[test]
    fn representation_settings_are_checked() {
        let g = Generator::new().source(
            "t.x",
            "enum st { OK = 0, BAD = 1 };\nstruct n { int v; n *next; };\nstruct t { t *l; t *r; };\nstruct u { n one; };\nunion o switch (bool b) { case TRUE: int x; case FALSE: int y; };\nunion r switch (st s) { case OK: void; };\ntypedef int i;",
        );
        let err = |g: Generator| g.generate_sources().unwrap_err().to_string();
        assert_eq!(
            err(g.clone().vec_list("t")),
            "vec_list(\"t\"): not a linked-list struct (`struct t { ...; t *next; }`)"
        );
        assert_eq!(
            err(g.clone().vec_list("nope")),
            "vec_list(\"nope\"): no struct of that name"
        );
        // `u` holds one node of `n` without the rest of its list: not representable.
        assert_eq!(
            err(g.clone().vec_list("n")),
            "t.x:4:8: vec_list(\"n\"): `u` uses `n` other than as `n *`"
        );
        assert!(err(g.clone().option_union("o")).starts_with("option_union(\"o\"): not a union"));
        assert!(err(g.clone().option_union("r")).starts_with("option_union(\"r\"): not a union"));
        assert_eq!(
            err(g.clone().newtype("st")),
            "newtype(\"st\"): no typedef of that name"
        );
        assert!(g.clone().newtype("i").generate_sources().is_ok());
        assert_eq!(
            err(g.clone().variant_name("st", "NOPE", "X")),
            "variant_name(\"st\", \"NOPE\", ..): `NOPE` is not an item of `st` (nor `default`)"
        );
        assert_eq!(
            err(g.clone().variant_name("st", "default", "Fail")),
            "variant_name(\"st\", \"default\", ..): no union switching on `st` has that arm"
        );
        assert_eq!(
            err(g.clone().variant_name("i", "OK", "Fine")),
            "variant_name(\"i\", ..): no enum of that name"
        );
        let src = g
            .variant_name("st", "OK", "Fine")
            .generate_sources()
            .unwrap();
        assert!(src.contains("    /// `case OK: void`.\n    Fine,"));
    }

    #[test]
    fn a_case_label_may_be_another_enums_item_with_a_value_of_the_discriminant() {
        // As FreeBSD's nlm_prot.x: `union nlm4_testrply switch (nlm4_stats stat)` labels its
        // arm `case nlm_denied:`, an item of the version 1-3 enum `nlm_stats` of the same value.
        let src = gen("enum old { O_OK = 0, O_DENIED = 1 };\nenum st { S_OK = 0, S_DENIED = 1 };\nunion u switch (st s) {\n case O_DENIED: int x;\n default: void;\n};")
            .unwrap();
        assert!(src.contains("    /// `case O_DENIED: int x`.\n    ODenied(i32),"));
        assert!(src.contains("            1 => Self::ODenied(d.i32()?),"));
        // Renaming the arm matches it by value, through the discriminant's own item.
        let src = Generator::new()
            .source(
                "t.x",
                "enum old { O_DENIED = 1 };\nenum st { S_OK = 0, S_DENIED = 1 };\nunion u switch (st s) { case O_DENIED: int x; default: void; };",
            )
            .variant_name("st", "S_DENIED", "Denied")
            .generate_sources()
            .unwrap();
        assert!(src.contains("            1 => Self::Denied(d.i32()?),"));
        assert_eq!(
            err("enum old { O_X = 5 };\nenum st { S_OK = 0 };\nunion u switch (st s) { case O_X: void; };"),
            "t.x:3:30: case `O_X` is not a value of enum `st`"
        );
    }

    #[test]
    fn extensions_add_enum_items_and_union_arms() {
        let src = Generator::new()
            .source(
                "t.x",
                "enum op { A = 1 };\nunion u switch (op o) { case A: void; };",
            )
            .extend_enum("op", "B = 2, C = 3")
            .extend_union("u", "case B: int b; case C: void;")
            .generate_sources()
            .unwrap();
        assert!(src.contains("    B = 2,"));
        assert!(src.contains("    /// `case B: int b`.\n    B(i32),"));
        assert!(src.contains("            2 => Self::B(d.i32()?),"));
    }

    #[test]
    fn generated_items_are_documented_with_their_origin() {
        let src = gen("const N = 0x10;\nconst M = -1;\nconst H = 0x100000000;\ntypedef opaque o<N>;\nstruct s {\n int type;\n o data;\n};")
            .unwrap();
        assert!(src.contains("/// XDR `const N`.\npub const N: u32 = 16;"));
        assert!(src.contains("pub const M: i32 = -1;"));
        assert!(src.contains("pub const H: u64 = 4294967296;"));
        assert!(
            src.contains("/// XDR `typedef opaque o<N>` (t.x:4).\npub type O = ::bytes::Bytes;")
        );
        assert!(src.contains("/// XDR struct `s` (t.x:5)."));
        assert!(src.contains("    /// `int type`.\n    pub r#type: i32,"));
        assert!(src.contains("let f_data = d.opaque(16)?;"));
    }

    #[test]
    fn unbounded_items_take_the_configured_defaults_and_overrides() {
        let g = Generator::new().source(
            "t.x",
            "typedef opaque blob<>;\ntypedef blob name;\ntypedef int list<>;\ntypedef opaque small<8>;\nstruct s { blob a; name b; list c; small d; blob e; };",
        );
        let src = g.clone().generate_sources().unwrap();
        assert!(src.contains("let f_a = d.opaque(1048576)?;"));
        assert!(src.contains("let f_c = d.array(1024, 4, |d| d.i32())?;"));
        let src = g
            .max_opaque(100)
            .max_array(7)
            .bound("name", 50)
            .bound("s.e", 9)
            .bound("s.d", 1000)
            .generate_sources()
            .unwrap();
        assert!(src.contains("let f_a = d.opaque(100)?;"));
        assert!(src.contains("let f_b = d.opaque(50)?;"));
        assert!(src.contains("let f_c = d.array(7, 4, |d| d.i32())?;"));
        // A bound written in the .x is never raised.
        assert!(src.contains("let f_d = d.opaque(8)?;"));
        assert!(src.contains("let f_e = d.opaque(9)?;"));
    }
}
