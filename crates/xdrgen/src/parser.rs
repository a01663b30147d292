//! Recursive-descent parser for the XDR language (RFC 4506 section 6.3) plus the RPC
//! `program`/`version` blocks (RFC 5531 section 12).

use crate::ast::*;
use crate::lexer::{Pos, Tok, Token};
use crate::Error;

/// Parses a whole specification.
pub fn parse(tokens: Vec<Token>) -> Result<Vec<Def>, Error> {
    let mut p = Parser { toks: tokens, i: 0 };
    let mut defs = Vec::new();
    while p.peek() != &Tok::Eof {
        defs.push(p.definition()?);
    }
    Ok(defs)
}

/// Parses the items of an enum body without its braces (`A = 1, B = 2`), for extensions.
pub fn parse_enum_items(tokens: Vec<Token>) -> Result<EnumBody, Error> {
    let mut p = Parser { toks: tokens, i: 0 };
    let mut items = Vec::new();
    loop {
        let (name, pos) = p.ident("an enum item name")?;
        p.expect('=')?;
        let v = p.value()?;
        items.push((name, v, pos));
        if p.eat(',') {
            if p.peek() == &Tok::Eof {
                break;
            }
            continue;
        }
        break;
    }
    p.expect_eof()?;
    Ok(EnumBody { items })
}

/// Parses union arms without the braces (`case A: T a; case B: void;`), for extensions.
pub fn parse_union_arms(tokens: Vec<Token>) -> Result<Vec<Arm>, Error> {
    let mut p = Parser { toks: tokens, i: 0 };
    let mut arms = Vec::new();
    while p.peek() != &Tok::Eof {
        arms.push(p.arm()?);
    }
    Ok(arms)
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
}

const FLOATS: [&str; 3] = ["float", "double", "quadruple"];

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.i].tok
    }

    fn pos(&self) -> Pos {
        self.toks[self.i].pos.clone()
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.i].clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == &Tok::Punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), Error> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self
                .pos()
                .err(format!("expected `{c}`, found {}", self.peek())))
        }
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), Error> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self
                .pos()
                .err(format!("expected `{kw}`, found {}", self.peek())))
        }
    }

    fn expect_eof(&mut self) -> Result<(), Error> {
        if self.peek() == &Tok::Eof {
            Ok(())
        } else {
            Err(self
                .pos()
                .err(format!("expected end of input, found {}", self.peek())))
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Pos), Error> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Ident(s) if !is_reserved(&s) => {
                self.bump();
                Ok((s, pos))
            }
            other => Err(pos.err(format!("expected {what}, found {other}"))),
        }
    }

    /// The `= NUMBER ;` that ends a procedure, version or program definition.
    fn numbered(&mut self) -> Result<Value, Error> {
        self.expect('=')?;
        let number = self.value()?;
        self.expect(';')?;
        Ok(number)
    }

    fn value(&mut self) -> Result<Value, Error> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Num(n) => {
                self.bump();
                Ok(Value::Num(n, pos))
            }
            Tok::Ident(s) if !is_reserved(&s) || s == "TRUE" || s == "FALSE" => {
                self.bump();
                Ok(Value::Name(s, pos))
            }
            other => Err(pos.err(format!(
                "expected a constant or a constant's name, found {other}"
            ))),
        }
    }

    fn definition(&mut self) -> Result<Def, Error> {
        let pos = self.pos();
        let kw = match self.peek() {
            Tok::Ident(s) => s.clone(),
            other => {
                return Err(pos.err(format!(
                    "expected a definition (const, typedef, enum, struct, union, program), found {other}"
                )))
            }
        };
        let def = match kw.as_str() {
            "const" => {
                self.bump();
                let (name, pos) = self.ident("a constant name")?;
                self.expect('=')?;
                let v = self.value()?;
                Def::Const(name, v, pos)
            }
            "typedef" => {
                self.bump();
                let d = self.declaration()?;
                if let Decl::Void(p) = &d {
                    return Err(p.err("`typedef void` declares nothing"));
                }
                Def::Typedef(d)
            }
            "enum" => {
                self.bump();
                let (name, pos) = self.ident("an enum name")?;
                Def::Enum(name, self.enum_body()?, pos)
            }
            "struct" => {
                self.bump();
                let (name, pos) = self.ident("a struct name")?;
                Def::Struct(name, self.struct_body()?, pos)
            }
            "union" => {
                self.bump();
                let (name, pos) = self.ident("a union name")?;
                Def::Union(name, Box::new(self.union_body()?), pos)
            }
            "program" => {
                self.bump();
                return self.program(pos);
            }
            _ => {
                return Err(pos.err(format!(
                    "expected a definition (const, typedef, enum, struct, union, program), found `{kw}`"
                )))
            }
        };
        self.expect(';')?;
        Ok(def)
    }

    fn program(&mut self, _pos: Pos) -> Result<Def, Error> {
        let (name, pos) = self.ident("a program name")?;
        self.expect('{')?;
        let mut versions = Vec::new();
        while !self.eat('}') {
            let vpos = self.pos();
            self.expect_kw("version")?;
            let (vname, _) = self.ident("a version name")?;
            self.expect('{')?;
            let mut procs = Vec::new();
            while !self.eat('}') {
                let ppos = self.pos();
                let result = self.proc_type()?;
                let (pname, _) = self.ident("a procedure name")?;
                self.expect('(')?;
                let mut args = Vec::new();
                loop {
                    if let Some(a) = self.proc_type()? {
                        args.push(a);
                    }
                    if !self.eat(',') {
                        break;
                    }
                }
                self.expect(')')?;
                let number = self.numbered()?;
                procs.push(Procedure {
                    name: pname,
                    result,
                    args,
                    number,
                    pos: ppos,
                });
            }
            if procs.is_empty() {
                return Err(vpos.err(format!("version `{vname}` has no procedures")));
            }
            let number = self.numbered()?;
            versions.push(Version {
                name: vname,
                procs,
                number,
                pos: vpos,
            });
        }
        if versions.is_empty() {
            return Err(pos.err(format!("program `{name}` has no versions")));
        }
        let number = self.numbered()?;
        Ok(Def::Program(name, versions, number, pos))
    }

    /// A procedure's result or argument type: `void` or a type name (builtins included).
    fn proc_type(&mut self) -> Result<Option<String>, Error> {
        if self.eat_kw("void") {
            return Ok(None);
        }
        let pos = self.pos();
        match self.type_spec()? {
            TypeSpec::Named(n, _) => Ok(Some(n)),
            TypeSpec::Int => Ok(Some("int".into())),
            TypeSpec::UInt => Ok(Some("unsigned int".into())),
            TypeSpec::Hyper => Ok(Some("hyper".into())),
            TypeSpec::UHyper => Ok(Some("unsigned hyper".into())),
            TypeSpec::Bool => Ok(Some("bool".into())),
            _ => Err(pos.err("a procedure's argument or result must be a type name")),
        }
    }

    fn enum_body(&mut self) -> Result<EnumBody, Error> {
        let open = self.pos();
        self.expect('{')?;
        let mut items = Vec::new();
        loop {
            let (name, pos) = self.ident("an enum item name")?;
            self.expect('=')?;
            let v = self.value()?;
            items.push((name, v, pos));
            if !self.eat(',') {
                break;
            }
        }
        self.expect('}')?;
        if items.is_empty() {
            return Err(open.err("empty enum"));
        }
        Ok(EnumBody { items })
    }

    fn struct_body(&mut self) -> Result<StructBody, Error> {
        self.expect('{')?;
        let mut fields = Vec::new();
        loop {
            let d = self.declaration()?;
            if let Decl::Void(p) = &d {
                return Err(p.err("`void` is not allowed as a struct member"));
            }
            fields.push(d);
            self.expect(';')?;
            if self.eat('}') {
                break;
            }
        }
        Ok(StructBody { fields })
    }

    fn arm(&mut self) -> Result<Arm, Error> {
        let mut labels = Vec::new();
        while self.eat_kw("case") {
            labels.push(self.value()?);
            self.expect(':')?;
        }
        if labels.is_empty() {
            return Err(self
                .pos()
                .err(format!("expected `case`, found {}", self.peek())));
        }
        let decl = self.declaration()?;
        self.expect(';')?;
        Ok(Arm { labels, decl })
    }

    fn union_body(&mut self) -> Result<UnionBody, Error> {
        self.expect_kw("switch")?;
        self.expect('(')?;
        let discr = self.declaration()?;
        if let Decl::Void(p) = &discr {
            return Err(p.err("a union discriminant cannot be `void`"));
        }
        self.expect(')')?;
        self.expect('{')?;
        let mut arms = Vec::new();
        let mut default = None;
        loop {
            if self.is_kw("case") {
                if default.is_some() {
                    return Err(self.pos().err("`case` after `default`"));
                }
                arms.push(self.arm()?);
            } else if self.eat_kw("default") {
                if default.is_some() {
                    return Err(self.pos().err("second `default` arm"));
                }
                self.expect(':')?;
                default = Some(self.declaration()?);
                self.expect(';')?;
            } else {
                break;
            }
        }
        let close = self.pos();
        self.expect('}')?;
        if arms.is_empty() {
            return Err(close.err("a union needs at least one `case` arm"));
        }
        Ok(UnionBody {
            discr,
            arms,
            default,
        })
    }

    fn type_spec(&mut self) -> Result<TypeSpec, Error> {
        let pos = self.pos();
        let word = match self.peek() {
            Tok::Ident(s) => s.clone(),
            other => return Err(pos.err(format!("expected a type, found {other}"))),
        };
        if FLOATS.contains(&word.as_str()) {
            return Err(pos.err(format!(
                "floating-point type `{word}` is not supported by this generator"
            )));
        }
        match word.as_str() {
            "unsigned" => {
                self.bump();
                if self.eat_kw("int") {
                    Ok(TypeSpec::UInt)
                } else if self.eat_kw("hyper") {
                    Ok(TypeSpec::UHyper)
                } else if self.eat_kw("long") {
                    // rpcgen's `unsigned long` (RFC 1813's uint32): 32 bits on the wire.
                    Ok(TypeSpec::UInt)
                } else if let Tok::Ident(w) = self.peek().clone() {
                    if matches!(w.as_str(), "short" | "char") {
                        Err(self.pos().err(format!("`unsigned {w}` is not an XDR type")))
                    } else {
                        Ok(TypeSpec::UInt)
                    }
                } else {
                    Ok(TypeSpec::UInt)
                }
            }
            "int" => {
                self.bump();
                Ok(TypeSpec::Int)
            }
            "hyper" => {
                self.bump();
                Ok(TypeSpec::Hyper)
            }
            "bool" => {
                self.bump();
                Ok(TypeSpec::Bool)
            }
            "long" => {
                // rpcgen's `long` (RFC 1813's int32), an `int` on the wire.
                self.bump();
                Ok(TypeSpec::Int)
            }
            "short" | "char" => Err(pos.err(format!("`{word}` is not an XDR type"))),
            "enum" => {
                self.bump();
                if self.peek() == &Tok::Punct('{') {
                    Ok(TypeSpec::Enum(self.enum_body()?))
                } else {
                    let (n, p) = self.ident("an enum name")?;
                    Ok(TypeSpec::Named(n, p))
                }
            }
            "struct" => {
                self.bump();
                if self.peek() == &Tok::Punct('{') {
                    Ok(TypeSpec::Struct(self.struct_body()?))
                } else {
                    let (n, p) = self.ident("a struct name")?;
                    Ok(TypeSpec::Named(n, p))
                }
            }
            "union" => {
                self.bump();
                if self.is_kw("switch") {
                    Ok(TypeSpec::Union(Box::new(self.union_body()?)))
                } else {
                    let (n, p) = self.ident("a union name")?;
                    Ok(TypeSpec::Named(n, p))
                }
            }
            w if is_reserved(w) => Err(pos.err(format!("expected a type, found `{w}`"))),
            _ => {
                self.bump();
                Ok(TypeSpec::Named(word, pos))
            }
        }
    }

    fn declaration(&mut self) -> Result<Decl, Error> {
        let pos = self.pos();
        if self.eat_kw("void") {
            return Ok(Decl::Void(pos));
        }
        if self.eat_kw("opaque") {
            let (name, _) = self.ident("a name after `opaque`")?;
            let kind = if self.eat('[') {
                let v = self.value()?;
                self.expect(']')?;
                DeclKind::Fixed(v)
            } else if self.eat('<') {
                let v = if self.eat('>') {
                    None
                } else {
                    let v = self.value()?;
                    self.expect('>')?;
                    Some(v)
                };
                DeclKind::Var(v)
            } else {
                return Err(self.pos().err(format!(
                    "`opaque {name}` needs a size: `[N]` (fixed) or `<N>`/`<>` (variable)"
                )));
            };
            return Ok(Decl::Named {
                name,
                ty: DeclType::Opaque,
                kind,
                pos,
            });
        }
        if self.eat_kw("string") {
            let (name, _) = self.ident("a name after `string`")?;
            if !self.eat('<') {
                return Err(self
                    .pos()
                    .err(format!("`string {name}` needs a maximum: `<N>` or `<>`")));
            }
            let v = if self.eat('>') {
                None
            } else {
                let v = self.value()?;
                self.expect('>')?;
                Some(v)
            };
            return Ok(Decl::Named {
                name,
                ty: DeclType::String,
                kind: DeclKind::Var(v),
                pos,
            });
        }
        let spec = self.type_spec()?;
        if self.eat('*') {
            let (name, _) = self.ident("a name after `*`")?;
            return Ok(Decl::Named {
                name,
                ty: DeclType::Spec(spec),
                kind: DeclKind::Optional,
                pos,
            });
        }
        let (name, _) = self.ident("a declaration name")?;
        let kind = if self.eat('[') {
            let v = self.value()?;
            self.expect(']')?;
            DeclKind::Fixed(v)
        } else if self.eat('<') {
            if self.eat('>') {
                DeclKind::Var(None)
            } else {
                let v = self.value()?;
                self.expect('>')?;
                DeclKind::Var(Some(v))
            }
        } else {
            DeclKind::Plain
        };
        Ok(Decl::Named {
            name,
            ty: DeclType::Spec(spec),
            kind,
            pos,
        })
    }
}

/// Words that cannot name a type, constant or field.
fn is_reserved(s: &str) -> bool {
    matches!(
        s,
        "bool"
            | "case"
            | "const"
            | "default"
            | "double"
            | "quadruple"
            | "enum"
            | "float"
            | "hyper"
            | "int"
            | "opaque"
            | "string"
            | "struct"
            | "switch"
            | "typedef"
            | "union"
            | "unsigned"
            | "void"
            | "program"
            | "version"
            | "TRUE"
            | "FALSE"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn p(s: &str) -> Result<Vec<Def>, Error> {
        parse(lex("t.x", s)?)
    }

    #[test]
    fn every_definition_kind_parses() {
        let defs = p("const A = 1;
             typedef opaque o<A>;
             enum e { X = 1, Y = A };
             struct s { int a; unsigned b; hyper c<>; s *next; opaque f[4]; string n<>; };
             union u switch (e d) { case X: case Y: int a; default: void; };
             program P { version V { void NUL(void) = 0; s GET(u, int) = 1; } = 2; } = 3;")
        .unwrap();
        assert_eq!(defs.len(), 6);
        match &defs[4] {
            Def::Union(_, b, _) => {
                assert_eq!(b.arms.len(), 1);
                assert_eq!(b.arms[0].labels.len(), 2);
                assert!(b.default.is_some());
            }
            other => panic!("{other:?}"),
        }
        match &defs[5] {
            Def::Program(name, vs, _, _) => {
                assert_eq!(name, "P");
                assert_eq!(
                    vs[0].procs[1].args,
                    vec!["u".to_string(), "int".to_string()]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = p("struct s {\n  int a\n};").unwrap_err();
        assert_eq!(e.to_string(), "t.x:3:1: expected `;`, found `}`");
        let e = p("\n\ntypedef float f;").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.x:3:9: floating-point type `float` is not supported by this generator"
        );
        let e = p("typedef opaque x;").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("t.x:1:17: `opaque x` needs a size"));
        let e = p("typedef string x[4];").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("t.x:1:17: `string x` needs a maximum"));
        let e = p("union u switch (int d) { default: void; };").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.x:1:41: a union needs at least one `case` arm"
        );
        let e = p("struct s { void; };").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.x:1:12: `void` is not allowed as a struct member"
        );
        let e = p("enum e { };").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.x:1:10: expected an enum item name, found `}`"
        );
        let e = p("typedef unsigned short x;").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.x:1:18: `unsigned short` is not an XDR type"
        );
        let e = p("typedef char x;").unwrap_err();
        assert_eq!(e.to_string(), "t.x:1:9: `char` is not an XDR type");
        // rpcgen's `long` and `unsigned long` (RFC 1813 writes its int32/uint32 so) are ints.
        let d = p("typedef unsigned long u;\ntypedef long i;").unwrap();
        assert!(matches!(
            &d[0],
            Def::Typedef(Decl::Named {
                ty: DeclType::Spec(TypeSpec::UInt),
                ..
            })
        ));
        assert!(matches!(
            &d[1],
            Def::Typedef(Decl::Named {
                ty: DeclType::Spec(TypeSpec::Int),
                ..
            })
        ));
        let e = p("foo;").unwrap_err();
        assert!(e.to_string().starts_with("t.x:1:1: expected a definition"));
    }
}
