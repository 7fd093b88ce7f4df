//! Recursive-descent parser over the token stream of `lex`.

use super::lex::{Tok, Token, lex};
use super::{Function, Init, Instr, Module, Operand, StateSpace, Stmt, VarDecl};
use crate::error::EmuError;

struct P<'a> {
    toks: Vec<Token<'a>>,
    pos: usize,
    /// Position of the end of input, for errors there.
    end: (u32, u32),
}

type R<T> = Result<T, EmuError>;

/// Parses PTX source into a syntax tree.
pub(crate) fn parse(src: &str) -> R<Module<'_>> {
    let toks = lex(src)?;
    let end = (src.lines().count() as u32 + 1, 1);
    let mut p = P { toks, pos: 0, end };
    p.module()
}

fn space_of(w: &str) -> Option<StateSpace> {
    Some(match w {
        ".reg" => StateSpace::Reg,
        ".global" => StateSpace::Global,
        ".shared" => StateSpace::Shared,
        ".local" => StateSpace::Local,
        ".const" => StateSpace::Const,
        ".param" => StateSpace::Param,
        ".tex" => StateSpace::Tex,
        _ => return None,
    })
}

const TYPES: &[&str] = &[
    ".b8",
    ".b16",
    ".b32",
    ".b64",
    ".b128",
    ".u8",
    ".u16",
    ".u32",
    ".u64",
    ".s8",
    ".s16",
    ".s32",
    ".s64",
    ".f16",
    ".f16x2",
    ".bf16",
    ".bf16x2",
    ".f32",
    ".f64",
    ".pred",
    ".texref",
    ".samplerref",
    ".surfref",
];

impl<'a> P<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).map(|t| t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<Tok<'a>> {
        self.toks.get(self.pos + k).map(|t| t.tok)
    }
    fn here(&self) -> (u32, u32) {
        self.toks
            .get(self.pos)
            .map(|t| (t.line, t.col))
            .unwrap_or(self.end)
    }
    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        let (line, col) = self.here();
        Err(EmuError::Parse {
            line,
            col,
            msg: msg.into(),
        })
    }
    fn next(&mut self) -> R<Tok<'a>> {
        match self.peek() {
            Some(t) => {
                self.pos += 1;
                Ok(t)
            }
            None => self.err("unexpected end of input"),
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> R<()> {
        if self.eat(c) {
            Ok(())
        } else {
            self.err(format!("expected '{c}', found {}", self.describe()))
        }
    }
    fn describe(&self) -> String {
        match self.peek() {
            None => "end of input".into(),
            Some(Tok::Word(w)) => format!("'{w}'"),
            Some(Tok::Punct(c)) => format!("'{c}'"),
            Some(Tok::Int(i)) => format!("'{i}'"),
            Some(t) => format!("{t:?}"),
        }
    }
    fn word(&mut self) -> R<&'a str> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                self.pos += 1;
                Ok(w)
            }
            _ => self.err(format!("expected a name, found {}", self.describe())),
        }
    }
    fn int(&mut self) -> R<i128> {
        let neg = self.eat('-');
        match self.next()? {
            Tok::Int(v) => Ok(if neg { -(v as i128) } else { v as i128 }),
            _ => {
                self.pos -= 1;
                self.err(format!("expected an integer, found {}", self.describe()))
            }
        }
    }
    fn skip_to_semicolon(&mut self) -> R<()> {
        while !self.eat(';') {
            self.next()?;
        }
        Ok(())
    }

    fn module(&mut self) -> R<Module<'a>> {
        let mut m = Module::default();
        while let Some(t) = self.peek() {
            match t {
                Tok::Word(".version") | Tok::Word(".address_size") => {
                    self.pos += 1;
                    self.next()?;
                }
                Tok::Word(".target") => {
                    self.pos += 1;
                    self.word()?;
                    while self.eat(',') {
                        self.word()?;
                    }
                }
                Tok::Word(".file") => {
                    self.pos += 1;
                    self.skip_file_directive()?;
                }
                Tok::Word(".section") => {
                    // DWARF sections: skip the braced body.
                    self.pos += 1;
                    self.word()?;
                    self.expect('{')?;
                    let mut depth = 1;
                    while depth > 0 {
                        match self.next()? {
                            Tok::Punct('{') => depth += 1,
                            Tok::Punct('}') => depth -= 1,
                            _ => {}
                        }
                    }
                }
                Tok::Punct(';') => self.pos += 1,
                Tok::Word(_) => self.top_level(&mut m)?,
                _ => return self.err(format!("unexpected {} at top level", self.describe())),
            }
        }
        Ok(m)
    }

    fn skip_file_directive(&mut self) -> R<()> {
        // .file N "name" [, timestamp, size]
        self.next()?;
        if let Some(Tok::Str(_)) = self.peek() {
            self.pos += 1;
        }
        while self.eat(',') {
            self.next()?;
        }
        Ok(())
    }

    fn top_level(&mut self, m: &mut Module<'a>) -> R<()> {
        let mut is_extern = false;
        loop {
            match self.peek() {
                Some(Tok::Word(".visible"))
                | Some(Tok::Word(".weak"))
                | Some(Tok::Word(".common")) => self.pos += 1,
                Some(Tok::Word(".extern")) => {
                    is_extern = true;
                    self.pos += 1
                }
                _ => break,
            }
        }
        match self.peek() {
            Some(Tok::Word(".entry")) | Some(Tok::Word(".func")) => {
                let f = self.function()?;
                m.functions.push(f);
                Ok(())
            }
            Some(Tok::Word(w)) if space_of(w).is_some() => {
                let mut d = self.var_decl()?;
                d.is_extern |= is_extern;
                self.expect(';')?;
                m.vars.push(d);
                Ok(())
            }
            _ => self.err(format!("unexpected {} at top level", self.describe())),
        }
    }

    /// `.space [.align N] [.vN] .type name[<n>|[n]] [= init]` (without the `;`).
    fn var_decl(&mut self) -> R<VarDecl<'a>> {
        let line = self.here().0;
        let w = self.word()?;
        let space = match space_of(w) {
            Some(s) => s,
            None => return self.err(format!("expected a state space, found '{w}'")),
        };
        let mut d = VarDecl {
            space,
            ty: "b8",
            name: "",
            align: 0,
            array: None,
            range: None,
            vector: 1,
            is_extern: false,
            init: Vec::new(),
            line,
        };
        loop {
            match self.peek() {
                Some(Tok::Word(".align")) => {
                    self.pos += 1;
                    d.align = self.int()? as u32;
                }
                Some(Tok::Word(".v2")) => {
                    self.pos += 1;
                    d.vector = 2
                }
                Some(Tok::Word(".v4")) => {
                    self.pos += 1;
                    d.vector = 4
                }
                Some(Tok::Word(".ptr"))
                | Some(Tok::Word(".global"))
                | Some(Tok::Word(".shared"))
                | Some(Tok::Word(".const"))
                | Some(Tok::Word(".local")) => self.pos += 1,
                Some(Tok::Word(t)) if TYPES.contains(&t) => {
                    self.pos += 1;
                    d.ty = &t[1..];
                }
                Some(Tok::Word(t)) if t.starts_with('.') => {
                    return self.err(format!("unknown declaration modifier '{t}'"));
                }
                _ => break,
            }
        }
        d.name = self.word()?;
        if self.eat('<') {
            d.range = Some(self.int()? as u32);
            self.expect('>')?;
        }
        while self.eat('[') {
            let n = if self.peek() == Some(Tok::Punct(']')) {
                0
            } else {
                self.int()? as u64
            };
            d.array = Some(d.array.map_or(n, |a| a.saturating_mul(n)));
            self.expect(']')?;
        }
        if self.eat('=') {
            self.initializer(&mut d.init)?;
        }
        Ok(d)
    }

    fn initializer(&mut self, out: &mut Vec<Init<'a>>) -> R<()> {
        if self.eat('{') {
            if !self.eat('}') {
                loop {
                    self.initializer(out)?;
                    if self.eat('}') {
                        break;
                    }
                    self.expect(',')?;
                }
            }
            return Ok(());
        }
        match self.peek() {
            Some(Tok::F32(b)) => {
                self.pos += 1;
                out.push(Init::F32(b));
            }
            Some(Tok::F64(b)) => {
                self.pos += 1;
                out.push(Init::F64(b));
            }
            Some(Tok::Word("generic")) => {
                self.pos += 1;
                self.expect('(')?;
                let n = self.word()?;
                self.expect(')')?;
                out.push(Init::Sym(n));
            }
            Some(Tok::Word(n)) => {
                self.pos += 1;
                out.push(Init::Sym(n));
            }
            _ => {
                let neg = self.eat('-');
                match self.next()? {
                    Tok::Int(v) => out.push(Init::Int(if neg { -(v as i128) } else { v as i128 })),
                    Tok::F64(b) => {
                        let f = f64::from_bits(b);
                        out.push(Init::F64((if neg { -f } else { f }).to_bits()))
                    }
                    _ => {
                        self.pos -= 1;
                        return self.err(format!("bad initializer {}", self.describe()));
                    }
                }
            }
        }
        Ok(())
    }

    fn param_list(&mut self) -> R<Vec<VarDecl<'a>>> {
        let mut v = Vec::new();
        self.expect('(')?;
        if self.eat(')') {
            return Ok(v);
        }
        loop {
            v.push(self.var_decl()?);
            if self.eat(')') {
                return Ok(v);
            }
            self.expect(',')?;
        }
    }

    fn function(&mut self) -> R<Function<'a>> {
        let line = self.here().0;
        let kind = self.word()?;
        let is_entry = kind == ".entry";
        let mut rets = Vec::new();
        if !is_entry && self.peek() == Some(Tok::Punct('(')) {
            rets = self.param_list()?;
        }
        let name = self.word()?;
        let params = if self.peek() == Some(Tok::Punct('(')) {
            self.param_list()?
        } else {
            Vec::new()
        };
        // performance directives: .maxntid 256, 1, 1 / .reqntid / .minnctapersm / .noreturn ...
        while let Some(Tok::Word(w)) = self.peek() {
            if !w.starts_with('.') {
                break;
            }
            self.pos += 1;
            while matches!(self.peek(), Some(Tok::Int(_))) {
                self.pos += 1;
                if !self.eat(',') {
                    break;
                }
            }
        }
        if self.eat(';') {
            return Ok(Function {
                name,
                is_entry,
                params,
                rets,
                body: None,
                line,
            });
        }
        self.expect('{')?;
        let mut body = Vec::new();
        let mut depth = 1;
        loop {
            match self.peek() {
                None => return self.err(format!("function '{name}' is not closed with '}}'")),
                Some(Tok::Punct('}')) => {
                    self.pos += 1;
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                    body.push(Stmt::ScopeClose);
                }
                Some(Tok::Punct('{')) => {
                    self.pos += 1;
                    depth += 1;
                    body.push(Stmt::ScopeOpen);
                }
                Some(Tok::Punct(';')) => self.pos += 1,
                Some(Tok::Word(w)) if space_of(w).is_some() => {
                    let start = self.pos;
                    if let Err(e) = self.decls(&mut body) {
                        body.push(Stmt::Bad(e));
                        self.recover(start);
                    }
                }
                Some(Tok::Word(".pragma")) | Some(Tok::Word(".loc")) | Some(Tok::Word(".file")) => {
                    self.skip_to_semicolon_or_line()?;
                }
                Some(Tok::Word(w)) if self.peek_at(1) == Some(Tok::Punct(':')) => {
                    self.pos += 2;
                    body.push(Stmt::Label(w));
                }
                _ => {
                    let start = self.pos;
                    match self.instr() {
                        Ok(i) => body.push(Stmt::Instr(i)),
                        Err(e) => {
                            body.push(Stmt::Bad(e));
                            self.recover(start);
                        }
                    }
                }
            }
        }
        Ok(Function {
            name,
            is_entry,
            params,
            rets,
            body: Some(body),
            line,
        })
    }

    /// One declaration statement; `.reg .f16 low, high;` declares several names at once.
    fn decls(&mut self, body: &mut Vec<Stmt<'a>>) -> R<()> {
        let d = self.var_decl()?;
        while self.eat(',') {
            let mut more = d.clone();
            more.name = self.word()?;
            more.range = None;
            if self.eat('<') {
                more.range = Some(self.int()? as u32);
                self.expect('>')?;
            }
            body.push(Stmt::Decl(more));
        }
        self.expect(';')?;
        body.push(Stmt::Decl(d));
        Ok(())
    }

    /// After a statement failed to parse: skips past its `;`, stopping before a brace so the
    /// function's scopes stay balanced; always moves at least one token.
    fn recover(&mut self, start: usize) {
        if self.pos == start {
            self.pos += 1;
        }
        while let Some(t) = self.peek() {
            match t {
                Tok::Punct(';') => {
                    self.pos += 1;
                    return;
                }
                Tok::Punct('{') | Tok::Punct('}') => return,
                _ => self.pos += 1,
            }
        }
    }

    /// `.loc` has no semicolon; `.pragma` does.
    fn skip_to_semicolon_or_line(&mut self) -> R<()> {
        let line = self.here().0;
        let w = self.word()?;
        if w == ".pragma" {
            return self.skip_to_semicolon();
        }
        while let Some(t) = self.toks.get(self.pos) {
            if t.line != line {
                break;
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn instr(&mut self) -> R<Instr<'a>> {
        let (line, col) = self.here();
        let mut guard = None;
        if self.eat('@') {
            let neg = self.eat('!');
            guard = Some((self.word()?, neg));
        }
        let opcode = self.word()?;
        let mut operands = Vec::new();
        if !self.eat(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat(';') {
                    break;
                }
                self.expect(',')?;
            }
        }
        Ok(Instr {
            guard,
            opcode,
            operands,
            line,
            col,
        })
    }

    fn operand(&mut self) -> R<Operand<'a>> {
        let first = self.simple_operand()?;
        if self.eat('|') {
            let second = self.simple_operand()?;
            return Ok(Operand::Pipe(Box::new(first), Box::new(second)));
        }
        Ok(first)
    }

    fn simple_operand(&mut self) -> R<Operand<'a>> {
        match self.next()? {
            Tok::Word("_") => Ok(Operand::Sink),
            Tok::Word(w) => Ok(Operand::Name(w)),
            Tok::Int(v) => Ok(Operand::Int(v as i64)),
            Tok::F32(b) => Ok(Operand::F32(b)),
            Tok::F64(b) => Ok(Operand::F64(b)),
            Tok::Punct('-') => match self.next()? {
                Tok::Int(v) => Ok(Operand::Int((v as i64).wrapping_neg())),
                Tok::F64(b) => Ok(Operand::F64((-f64::from_bits(b)).to_bits())),
                _ => {
                    self.pos -= 1;
                    self.err(format!(
                        "expected a number after '-', found {}",
                        self.describe()
                    ))
                }
            },
            Tok::Punct('!') => Ok(Operand::Not(Box::new(self.simple_operand()?))),
            Tok::Punct('{') => {
                let mut v = Vec::new();
                if !self.eat('}') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat('}') {
                            break;
                        }
                        self.expect(',')?;
                    }
                }
                Ok(Operand::Vector(v))
            }
            Tok::Punct('(') => {
                let mut v = Vec::new();
                if !self.eat(')') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat(')') {
                            break;
                        }
                        self.expect(',')?;
                    }
                }
                Ok(Operand::List(v))
            }
            Tok::Punct('[') => {
                let mut base = None;
                let mut offset: i64 = 0;
                match self.peek() {
                    Some(Tok::Word(w)) => {
                        self.pos += 1;
                        base = Some(w);
                    }
                    Some(Tok::Int(_)) | Some(Tok::Punct('-')) => offset = self.int()? as i64,
                    _ => return self.err(format!("bad address {}", self.describe())),
                }
                while self.eat('+') {
                    offset = offset.wrapping_add(self.int()? as i64);
                }
                if self.peek() == Some(Tok::Punct('-')) {
                    offset = offset.wrapping_add(self.int()? as i64);
                }
                let mut extra = None;
                if self.eat(',') {
                    extra = Some(Box::new(self.operand()?));
                }
                self.expect(']')?;
                Ok(Operand::Addr {
                    base,
                    offset,
                    extra,
                })
            }
            _ => {
                self.pos -= 1;
                self.err(format!("expected an operand, found {}", self.describe()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
.version 9.0
.target sm_75
.address_size 64
.global .align 4 .b8 tab[4] = {1, 2, 3, 4};
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(
	.param .u64 k_param_0,
	.param .align 8 .b8 k_param_1[16]
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	mov.u32 	%r1, %tid.x;
	setp.ge.s32 	%p1, %r1, 5;
	@!%p1 bra 	$L__BB0_2;
	shfl.sync.down.b32 	%r2|%p2, %r1, 1, 31, -1;
	tex.2d.v4.f32.f32 	{%r3, %r4, %r5, %r6}, [%rd10, {%r1, %r2}];
	ld.global.f32 %r7, [%rd1+-4];
$L__BB0_2:
	{ .reg .b16 %rs; cvt.rn.f16.f32 %rs, %r1; }
	ret;
}
"#;

    #[test]
    fn parses_nvcc_style_ptx() {
        let m = parse(SRC).unwrap();
        assert_eq!(m.vars.len(), 2);
        assert_eq!(
            m.vars[0].init,
            vec![Init::Int(1), Init::Int(2), Init::Int(3), Init::Int(4)]
        );
        assert_eq!(m.vars[1].array, Some(0));
        let f = &m.functions[0];
        assert!(f.is_entry);
        assert_eq!(f.params[1].array, Some(16));
        let body = f.body.as_ref().unwrap();
        let instrs: Vec<_> = body
            .iter()
            .filter_map(|s| {
                if let Stmt::Instr(i) = s {
                    Some(i)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(instrs[2].guard, Some(("%p1", true)));
        assert!(matches!(instrs[3].operands[0], Operand::Pipe(..)));
        assert_eq!(instrs[3].operands[4], Operand::Int(-1));
        assert!(matches!(
            &instrs[4].operands[1],
            Operand::Addr { extra: Some(_), .. }
        ));
        assert!(matches!(
            instrs[5].operands[1],
            Operand::Addr { offset: -4, .. }
        ));
        assert!(body.iter().any(|s| matches!(s, Stmt::Label("$L__BB0_2"))));
    }

    #[test]
    fn error_carries_line_and_column() {
        let src = ".version 9.0\n.entry k()\n{\n  add.s32 %r1, %r2 %r3;\n}\n";
        let m = parse(src).unwrap();
        let body = m.functions[0].body.as_ref().unwrap();
        match &body[..] {
            [Stmt::Bad(EmuError::Parse { line, col, .. })] => assert_eq!((*line, *col), (4, 20)),
            other => panic!("expected one bad statement, got {other:?}"),
        }
    }

    #[test]
    fn a_bad_statement_spoils_only_itself() {
        // The parser skips to the next ';' and keeps the function's braces balanced.
        let src = ".version 9.0\n.entry a()\n{\n  bogus [[;\n  { .reg .b32 %x; nope %x %x; }\n  ret;\n}\n.entry b()\n{\n  ret;\n}\n";
        let m = parse(src).unwrap();
        assert_eq!(m.functions.len(), 2);
        let a = m.functions[0].body.as_ref().unwrap();
        assert_eq!(a.iter().filter(|s| matches!(s, Stmt::Bad(_))).count(), 2);
        assert!(matches!(a.last(), Some(Stmt::Instr(i)) if i.opcode == "ret"));
        assert!(matches!(
            &m.functions[1].body.as_ref().unwrap()[..],
            [Stmt::Instr(_)]
        ));
    }
}
