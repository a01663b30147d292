//! The syntax tree of an XDR specification (RFC 4506 section 6.3).

use crate::lexer::Pos;

/// A `value`: a constant, or the name of a constant or enum item.
#[derive(Debug, Clone)]
pub enum Value {
    /// A literal number.
    Num(i128, Pos),
    /// A named constant or enum item.
    Name(String, Pos),
}

impl Value {
    /// Where the value was written.
    pub fn pos(&self) -> &Pos {
        match self {
            Value::Num(_, p) | Value::Name(_, p) => p,
        }
    }
}

/// A type specifier.
#[derive(Debug, Clone)]
pub enum TypeSpec {
    /// `int`.
    Int,
    /// `unsigned int` (or `unsigned`).
    UInt,
    /// `hyper`.
    Hyper,
    /// `unsigned hyper`.
    UHyper,
    /// `bool`.
    Bool,
    /// A named type.
    Named(String, Pos),
    /// An inline `enum { ... }`.
    Enum(EnumBody),
    /// An inline `struct { ... }`.
    Struct(StructBody),
    /// An inline `union switch ...`.
    Union(Box<UnionBody>),
}

/// How a declaration modifies its type.
#[derive(Debug, Clone)]
pub enum DeclKind {
    /// `T x`.
    Plain,
    /// `T x[N]` or `opaque x[N]`.
    Fixed(Value),
    /// `T x<N>`, `T x<>`, `opaque x<N>`, `string x<N>`.
    Var(Option<Value>),
    /// `T *x`.
    Optional,
}

/// The type part of a declaration.
#[derive(Debug, Clone)]
pub enum DeclType {
    /// A type specifier.
    Spec(TypeSpec),
    /// `opaque` (only with `[N]` or `<N>`).
    Opaque,
    /// `string` (only with `<N>`).
    String,
}

/// A declaration (RFC 4506 section 6.3 `declaration`).
#[derive(Debug, Clone)]
pub enum Decl {
    /// `void`.
    Void(Pos),
    /// A named item.
    Named {
        /// The declared name.
        name: String,
        /// Its type.
        ty: DeclType,
        /// Array, optional or plain.
        kind: DeclKind,
        /// Where the declaration starts.
        pos: Pos,
    },
}

impl Decl {
    /// Where the declaration starts.
    pub fn pos(&self) -> &Pos {
        match self {
            Decl::Void(p) | Decl::Named { pos: p, .. } => p,
        }
    }
}

/// The items of an enum.
#[derive(Debug, Clone)]
pub struct EnumBody {
    /// `(name, value, position)` in order.
    pub items: Vec<(String, Value, Pos)>,
}

/// The fields of a struct.
#[derive(Debug, Clone)]
pub struct StructBody {
    /// Declarations in order.
    pub fields: Vec<Decl>,
}

/// One `case ...: declaration;` arm (several labels may share it).
#[derive(Debug, Clone)]
pub struct Arm {
    /// The case labels.
    pub labels: Vec<Value>,
    /// The arm's declaration.
    pub decl: Decl,
}

/// The body of a union.
#[derive(Debug, Clone)]
pub struct UnionBody {
    /// The discriminant declaration.
    pub discr: Decl,
    /// The arms in order.
    pub arms: Vec<Arm>,
    /// The `default:` arm.
    pub default: Option<Decl>,
}

/// A procedure of a program version.
#[derive(Debug, Clone)]
pub struct Procedure {
    /// Procedure name.
    pub name: String,
    /// Result type name (`None` for void).
    pub result: Option<String>,
    /// Argument type names.
    pub args: Vec<String>,
    /// Procedure number.
    pub number: Value,
    /// Position.
    pub pos: Pos,
}

/// A version of a program.
#[derive(Debug, Clone)]
pub struct Version {
    /// Version name.
    pub name: String,
    /// Its procedures.
    pub procs: Vec<Procedure>,
    /// Version number.
    pub number: Value,
    /// Position.
    pub pos: Pos,
}

/// A top-level definition.
#[derive(Debug, Clone)]
pub enum Def {
    /// `const NAME = value;`.
    Const(String, Value, Pos),
    /// `typedef declaration;`.
    Typedef(Decl),
    /// `enum name { ... };`.
    Enum(String, EnumBody, Pos),
    /// `struct name { ... };`.
    Struct(String, StructBody, Pos),
    /// `union name switch (...) { ... };`.
    Union(String, Box<UnionBody>, Pos),
    /// `program NAME { version ... } = N;`.
    Program(String, Vec<Version>, Value, Pos),
}
