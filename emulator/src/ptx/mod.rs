//! PTX front end: lexer and recursive-descent parser producing a small syntax tree, which
//! `crate::decode` then lowers into the interpreter's compact form.
//!
//! Why hand-written: the crates.io PTX parsers were either unfinished prototypes (`ptx-parser`
//! 0.1, 2023) or alpha-stage with one Rust type per instruction variant (`ptx-90-parser`,
//! `singe-ptx`), and none reports errors as line/column values we can carry into `EmuError`.
//! PTX's syntax is small and regular, so ~500 lines cover what nvcc emits.
//!
//! Main types: [`Module`] (top-level variables and functions), [`Function`], [`Stmt`],
//! [`Operand`]. Example:
//! ```ignore
//! let m = ptx::parse(".version 8.0\n.target sm_75\n.address_size 64\n.entry k() { ret; }")?;
//! assert_eq!(m.functions[0].name, "k");
//! ```

mod lex;
mod parse;

pub(crate) use parse::parse;

/// A whole PTX module.
#[derive(Debug, Clone, Default)]
pub(crate) struct Module<'a> {
    pub vars: Vec<VarDecl<'a>>,
    pub functions: Vec<Function<'a>>,
}

/// A state space of a variable or memory instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateSpace {
    Reg,
    Global,
    Shared,
    Local,
    Const,
    Param,
    Tex,
}

/// A `.reg`/`.global`/`.shared`/... declaration.
#[derive(Debug, Clone)]
pub(crate) struct VarDecl<'a> {
    pub space: StateSpace,
    /// Element type as written (`.b8`, `.u32`, `.f32`, `.pred`, ...) without the dot.
    pub ty: &'a str,
    pub name: &'a str,
    pub align: u32,
    /// `Some(n)` for `name[n]`, `Some(0)` for `name[]` (extern dynamic shared), `None` for scalars.
    pub array: Option<u64>,
    /// `%r<31>` declares 31 registers `%r0..%r30`.
    pub range: Option<u32>,
    pub vector: u32,
    pub is_extern: bool,
    /// Initializer elements (integers or float bits, per `ty`).
    pub init: Vec<Init<'a>>,
    pub line: u32,
}

/// One initializer element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Init<'a> {
    Int(i128),
    F32(u32),
    F64(u64),
    /// Address of another variable (`generic(name)` or `name`).
    Sym(&'a str),
}

/// An `.entry` kernel or a `.func`.
#[derive(Debug, Clone)]
pub(crate) struct Function<'a> {
    pub name: &'a str,
    pub is_entry: bool,
    pub params: Vec<VarDecl<'a>>,
    pub rets: Vec<VarDecl<'a>>,
    /// `None` for `.extern .func` declarations.
    pub body: Option<Vec<Stmt<'a>>>,
    pub line: u32,
}

/// A statement of a function body.
#[derive(Debug, Clone)]
pub(crate) enum Stmt<'a> {
    Label(&'a str),
    Decl(VarDecl<'a>),
    Instr(Instr<'a>),
    /// `{` / `}`: nested scopes (inline asm blocks, call sequences).
    ScopeOpen,
    ScopeClose,
    /// A statement that did not parse. The parser skips to the next `;` and goes on, so one
    /// instruction the emulator cannot read makes only its own kernel unusable (decode turns
    /// this into that kernel's error), never the whole module.
    Bad(crate::error::EmuError),
}

/// One instruction as written.
#[derive(Debug, Clone)]
pub(crate) struct Instr<'a> {
    /// `@%p` / `@!%p`.
    pub guard: Option<(&'a str, bool)>,
    /// Opcode word with its modifiers, e.g. `ld.global.nc.v4.f32`.
    pub opcode: &'a str,
    pub operands: Vec<Operand<'a>>,
    pub line: u32,
    pub col: u32,
}

/// An operand as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand<'a> {
    /// `%r1`, `%tid.x`, a variable, label or function name.
    Name(&'a str),
    Int(i64),
    F32(u32),
    F64(u64),
    /// `!%p`
    Not(Box<Operand<'a>>),
    /// `%r|%p` (shfl, setp two results).
    Pipe(Box<Operand<'a>>, Box<Operand<'a>>),
    /// `{a, b, ...}`
    Vector(Vec<Operand<'a>>),
    /// `(a, b)` in calls.
    List(Vec<Operand<'a>>),
    /// `[base+off]` or, for textures, `[handle, {coords}]`.
    Addr {
        base: Option<&'a str>,
        offset: i64,
        extra: Option<Box<Operand<'a>>>,
    },
    /// `_`
    Sink,
}
