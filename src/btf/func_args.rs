//! The parameters of the kernel's functions from BTF (`BTF_KIND_FUNC` and
//! its `FUNC_PROTO`), what funcgraph-args needs to print a function's
//! arguments as the kernel does (`print_function_args()`).

use alloc::string::String;
use alloc::vec::Vec;

use super::blob::*;
use super::BtfError;

/// How `print_function_args()` (7.2 kernel/trace/trace_output.c) prints one
/// parameter, by the BTF kind of its type after `btf_type_skip_modifiers()`
/// (typedefs, const, volatile, restrict and type tags skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgType {
    /// No type (id 0, a variadic `...`): `?0x%lx`.
    Unknown,
    /// A pointer: `0x%lx`.
    Pointer,
    /// An integer: `%ld` when signed, else `0x%lx`.
    Int {
        /// `BTF_INT_SIGNED` is set in the int's encoding.
        signed: bool,
    },
    /// An enum (32-bit enumerators): `%ld`, then ` [NAME]` of the first
    /// enumerator with that value.
    Enum(Vec<(u64, String)>),
    /// Anything else (a struct or union by value, a float, a 64-bit enum):
    /// `(KIND)[0x%lx` and one more `:0x%lx` per further `long` of its size,
    /// `]`; KIND is `btf_type_str()`, the kind's upper-case name.
    Other {
        /// The kind's name as `btf_type_str()` prints it (`STRUCT`, `UNION`, …).
        kind: &'static str,
        /// The type's size in bytes.
        size: u32,
    },
}

/// One parameter of a function: its name (may be empty) and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) ty: ArgType,
}

/// The parameters of the kernel's functions (`BTF_KIND_FUNC` and its
/// `FUNC_PROTO`), what funcgraph-args needs to print a function's
/// arguments as the kernel does (`print_function_args()`).
#[derive(Debug, Default, Clone)]
pub(crate) struct FuncArgs {
    funcs: alloc::collections::BTreeMap<String, Vec<Param>>,
}

/// `btf_kind_str[]` (kernel/bpf/btf.c), what `btf_type_str()` prints.
fn kind_str(kind: u8) -> &'static str {
    match kind {
        K_INT => "INT",
        K_PTR => "PTR",
        K_ARRAY => "ARRAY",
        K_STRUCT => "STRUCT",
        K_UNION => "UNION",
        K_ENUM => "ENUM",
        K_FWD => "FWD",
        K_TYPEDEF => "TYPEDEF",
        K_VOLATILE => "VOLATILE",
        K_CONST => "CONST",
        K_RESTRICT => "RESTRICT",
        K_FUNC => "FUNC",
        K_FUNC_PROTO => "FUNC_PROTO",
        K_VAR => "VAR",
        K_DATASEC => "DATASEC",
        K_FLOAT => "FLOAT",
        K_DECL_TAG => "DECL_TAG",
        K_TYPE_TAG => "TYPE_TAG",
        K_ENUM64 => "ENUM64",
        _ => "UNKN",
    }
}

impl FuncArgs {
    /// The functions of a vmlinux blob whose names `keep` accepts (e.g.
    /// those in a trace's kallsyms), with their parameters.
    pub(crate) fn parse(raw: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<FuncArgs, BtfError> {
        let (t, strs) = header(raw)?;
        let strs = Strs { base: None, own: strs, own_start: 0 };
        let mut offs = Vec::with_capacity(t.b.len() / 40);
        let mut funcs = Vec::new();
        walk(t, |r| {
            offs.push(u32::try_from(r.off).map_err(|_| BtfError::TooLarge)?);
            if r.kind == K_FUNC {
                let name = strs.get(r.name_off).ok_or(BtfError::BadString { offset: r.off })?;
                if let Ok(n) = core::str::from_utf8(name) {
                    if keep(n) {
                        funcs.push((n, r.size_or_type));
                    }
                }
            }
            Ok(())
        })?;
        let rec = |id: u32| -> Option<(usize, u8, bool, u32, usize)> {
            let off = *offs.get(usize::try_from(id).ok()?.checked_sub(1)?)? as usize;
            let info = t.u32(off + 4)?;
            Some((off, ((info >> 24) & 0x1f) as u8, info >> 31 != 0, t.u32(off + 8)?, (info & 0xffff) as usize))
        };
        let mut out = FuncArgs::default();
        for (name, proto) in funcs {
            let Some((off, K_FUNC_PROTO, _, _, vlen)) = rec(proto) else { continue };
            let mut params = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let at = off + REC + i * 8;
                let (Some(pn), Some(mut ty)) = (t.u32(at), t.u32(at + 4)) else { break };
                let pname = strs.get(pn).and_then(|s| core::str::from_utf8(s).ok()).unwrap_or("");
                // btf_type_skip_modifiers(): typedefs and qualifiers.
                let mut arg = ArgType::Unknown;
                for _ in 0..32 {
                    if ty == 0 {
                        break;
                    }
                    let Some((o, kind, _, st, vl)) = rec(ty) else { break };
                    arg = match kind {
                        K_TYPEDEF | K_CONST | K_VOLATILE | K_RESTRICT | K_TYPE_TAG => {
                            ty = st;
                            continue;
                        }
                        K_PTR => ArgType::Pointer,
                        K_INT => ArgType::Int { signed: t.u32(o + REC).is_some_and(|e| (e >> 24) & 1 != 0) },
                        K_ENUM => {
                            let mut v = Vec::with_capacity(vl);
                            for k in 0..vl {
                                let (Some(n), Some(val)) = (t.u32(o + REC + k * 8), t.u32(o + REC + k * 8 + 4)) else {
                                    break;
                                };
                                // `arg == enums[i].val`: struct btf_enum's
                                // `__s32 val`, sign-extended to a long.
                                let val = val as i32 as i64 as u64;
                                let n = strs.get(n).and_then(|s| core::str::from_utf8(s).ok()).unwrap_or("");
                                v.push((val, String::from(n)));
                            }
                            ArgType::Enum(v)
                        }
                        k => ArgType::Other { kind: kind_str(k), size: st },
                    };
                    break;
                }
                params.push(Param { name: String::from(pname), ty: arg });
            }
            out.funcs.entry(String::from(name)).or_insert(params);
        }
        Ok(out)
    }

    /// The parameters of function `name`; `None`: BTF has no such function.
    pub(crate) fn params(&self, name: &str) -> Option<&[Param]> {
        self.funcs.get(name).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::super::blob::test_blob::B;
    use super::*;
    use alloc::vec;

    /// `FuncArgs`: a FUNC's FUNC_PROTO parameters, typedefs and qualifiers
    /// skipped as `btf_type_skip_modifiers()` does, kinds as
    /// `print_function_args()` tells them apart.
    #[test]
    fn function_parameters() {
        for be in [false, true] {
            let mut b = B::new(be);
            let int = b.t("int", K_INT, 0, false, 4);
            b.w(1 << 24 | 32);
            let uint = b.t("unsigned int", K_INT, 0, false, 4);
            b.w(32);
            let u32_ = b.t("u32", K_TYPEDEF, 0, false, uint);
            let cu32 = b.t("", K_CONST, 0, false, u32_);
            let chr = b.t("char", K_INT, 0, false, 1);
            b.w(1 << 24 | 8);
            let ptr = b.t("", K_PTR, 0, false, chr);
            let en = b.t("mode", K_ENUM, 2, false, 4);
            let (a, c) = (b.s("MODE_A"), b.s("MODE_C"));
            b.w(a);
            b.w(0);
            b.w(c);
            b.w(2);
            let st = b.t("pair", K_STRUCT, 0, false, 16);
            let proto = b.t("", K_FUNC_PROTO, 6, false, int);
            for (n, t) in [("dfd", int), ("name", ptr), ("flags", cu32), ("m", en), ("p", st), ("", 0)] {
                let n = b.s(n);
                b.w(n);
                b.w(t);
            }
            b.t("do_it", K_FUNC, 0, false, proto);
            b.t("skipped", K_FUNC, 0, false, proto);
            let f = FuncArgs::parse(&b.blob(0), &|n| n != "skipped").unwrap();
            assert_eq!(f.funcs.len(), 1);
            assert!(f.params("skipped").is_none());
            let p = f.params("do_it").unwrap();
            let names: Vec<&str> = p.iter().map(|x| x.name.as_str()).collect();
            assert_eq!(names, ["dfd", "name", "flags", "m", "p", ""]);
            assert_eq!(p[0].ty, ArgType::Int { signed: true });
            assert_eq!(p[1].ty, ArgType::Pointer);
            assert_eq!(p[2].ty, ArgType::Int { signed: false });
            assert_eq!(p[3].ty, ArgType::Enum(vec![(0, "MODE_A".into()), (2, "MODE_C".into())]));
            assert_eq!(p[4].ty, ArgType::Other { kind: "STRUCT", size: 16 });
            assert_eq!(p[5].ty, ArgType::Unknown);
            // Never a panic on a damaged blob: every cut, every byte flipped.
            let raw = b.blob(0);
            for n in 0..raw.len() {
                let _ = FuncArgs::parse(&raw[..n], &|_| true);
                let mut bad = raw.clone();
                bad[n] ^= 0xff;
                let _ = FuncArgs::parse(&bad, &|_| true);
            }
        }
    }
}
