//! One event as a JSON object on one line (`tr-cat --json`), written with
//! [`crate::json`]'s primitives.

use core::fmt::{self, Write};

use super::cmdlines::Cmdlines;
use crate::abi::Endian;
use crate::format::EventFormat;
use crate::json::{int as json_int, string as json_str, text as json_text, uint as json_uint, uint_array};

/// One event as a JSON object on one line: `{"ts_ns":…,"cpu":…,"pid":…,
/// "comm":"…","event":"sys:name","fields":{…}}`. Integers stay numbers,
/// char arrays and `__data_loc char[]` become strings, other arrays lists.
/// `buffer`: the name of the buffer it comes from (`""` for the top one),
/// given when the input holds several; it follows `cpu`. `pid`: its
/// `common_pid`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_json(
    w: &mut dyn Write,
    ev: &EventFormat,
    cmdlines: &Cmdlines,
    e: Endian,
    cpu: u32,
    buffer: Option<&str>,
    ts: u64,
    pid: i32,
    payload: &[u8],
) -> fmt::Result {
    use crate::format::{FieldKind, Value};
    w.write_str("{\"ts_ns\":")?;
    json_uint(w, ts)?;
    w.write_str(",\"cpu\":")?;
    json_uint(w, u64::from(cpu))?;
    // Literal pieces joined: each write is a call.
    if let Some(b) = buffer {
        w.write_str(",\"buffer\":")?;
        json_str(w, b)?;
    }
    w.write_str(",\"pid\":")?;
    json_int(w, i64::from(pid))?;
    w.write_str(",\"comm\":")?;
    json_str(w, cmdlines.comm(pid))?;
    w.write_str(",\"event\":\"")?;
    json_text(w, &ev.system)?;
    w.write_str(":")?;
    json_text(w, &ev.name)?;
    w.write_str("\",\"fields\":{")?;
    for (i, f) in ev.fields.iter().enumerate() {
        w.write_str(if i > 0 { ",\"" } else { "\"" })?;
        json_text(w, &f.name)?;
        w.write_str("\":")?;
        // Field::typed's rule: integers, strings, other arrays.
        match f.typed(payload, e) {
            None => w.write_str("null")?,
            Some(Value::Signed(v)) => json_int(w, v)?,
            Some(Value::Unsigned(v)) => json_uint(w, v)?,
            Some(Value::Str(b)) => json_str(w, &alloc::string::String::from_utf8_lossy(b))?,
            // A scalar of an odd size: no integer JSON has.
            Some(Value::Bytes(_)) if f.kind == FieldKind::Scalar => w.write_str("null")?,
            // Each element's bits, whatever its sign (as --json always
            // wrote them).
            Some(Value::Ints(a)) => uint_array(w, a.uints())?,
            // Single bytes, or elements of no integer's size: each byte.
            Some(Value::Bytes(b)) => uint_array(w, b.iter().map(|&c| u64::from(c)))?,
        }
    }
    w.write_str("}}\n")
}
