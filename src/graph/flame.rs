//! A flame graph as an SVG file (sans-IO), from folded stacks: the picture
//! flamegraph.pl draws from the same `a;b;c WEIGHT` lines, without its
//! JavaScript, so that it opens in any browser and needs nothing installed.
//!
//! Each distinct frame path is one box: its width is the sum of the weights
//! of every line that starts with that path (the frame's inclusive time, as
//! [`super::stats`]'s weights are self times), the root (`all`) at the
//! bottom, callees above their callers. Boxes are laid out the way
//! flamegraph.pl's "flow" does: lines sorted, a frame stays open while the
//! next line shares its path, so siblings sit side by side in name order.
//! Each box has a `<title>` (name, time, share of the whole) that browsers
//! show on hover; names that do not fit are cut with `..`, and boxes
//! narrower than [`MIN_WIDTH`] tenths of a pixel are left out (their time
//! is still in their parents' width). Positions are worked out in integer
//! tenths of a pixel: no float formatting in the binary (it would cost the
//! board build ~25 KiB, docs/size.md).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Width of the picture in pixels (flamegraph.pl's default).
pub(crate) const WIDTH: u32 = 1200;
/// Height of one frame row.
const ROW: u32 = 16;
/// Margins: left/right, above the title, below the last row.
const PAD_X: u32 = 10;
const PAD_TOP: u32 = 40;
const PAD_BOTTOM: u32 = 10;
/// Boxes narrower than this (tenths of a pixel) are not drawn.
pub(crate) const MIN_WIDTH: u64 = 1;
/// Average width of a character of the 12-pixel font (tenths of a
/// pixel), for cutting names.
const CHAR_PX: u64 = 70;

/// One box: a frame path's name, depth (0: `all`) and span of the total
/// weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub(crate) name: &'a str,
    pub(crate) depth: usize,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// The boxes of `folded` (`(path, weight)`, frames separated by `;`; zero
/// weights ignored), in the order they close, and the total weight. The
/// root `all` spans the total.
pub(crate) fn frames(folded: &[(String, u64)]) -> (Vec<Frame<'_>>, u64) {
    let mut rows: Vec<(&str, u64)> = folded.iter().filter(|r| r.1 > 0).map(|(p, w)| (p.as_str(), *w)).collect();
    rows.sort_unstable();
    let mut out = Vec::new();
    // The open frames: name and where it started.
    let mut open: Vec<(&str, u64)> = Vec::new();
    let mut x = 0u64;
    for (path, w) in rows {
        let names: Vec<&str> = path.split(';').filter(|n| !n.is_empty()).collect();
        let same = open.iter().zip(&names).take_while(|(o, n)| o.0 == **n).count();
        while open.len() > same {
            if let Some((name, start)) = open.pop() {
                out.push(Frame { name, depth: open.len() + 1, start, end: x });
            }
        }
        for n in names.iter().skip(same) {
            open.push((n, x));
        }
        x = x.saturating_add(w);
    }
    while let Some((name, start)) = open.pop() {
        out.push(Frame { name, depth: open.len() + 1, start, end: x });
    }
    out.push(Frame { name: "all", depth: 0, start: 0, end: x });
    (out, x)
}

/// `s` with XML's special characters escaped, for text and attributes.
fn escape(w: &mut dyn Write, s: &str) -> fmt::Result {
    let mut rest = s;
    while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
        w.write_str(&rest[..i])?;
        w.write_str(match rest.as_bytes().get(i) {
            Some(b'&') => "&amp;",
            Some(b'<') => "&lt;",
            Some(b'>') => "&gt;",
            Some(b'"') => "&quot;",
            _ => "&#39;",
        })?;
        rest = &rest[i + 1..];
    }
    w.write_str(rest)
}

/// A warm colour from the name (the same name, the same colour in every
/// picture), as flamegraph.pl's "hot" palette: red to yellow.
fn colour(name: &str) -> (u32, u32, u32) {
    // FNV-1a, then three fractions from its bytes.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    let v = |shift: u32| (h >> shift) & 0xff;
    (205 + v(0) * 50 / 255, v(8) * 230 / 255, v(16) * 55 / 255)
}

/// Tenths of a pixel as `P.T`.
fn px(w: &mut dyn Write, tenths: u64) -> fmt::Result {
    write!(w, "{}.{}", tenths / 10, tenths % 10)
}

/// Time in µs with three decimals, from a weight in ns.
fn micros(w: &mut dyn Write, ns: u64) -> fmt::Result {
    write!(w, "{}.{:03} us", ns / 1000, ns % 1000)
}

/// Write the SVG of `folded` (weights in ns) with `title` above it. An input
/// without weight gives a picture that says so.
pub(crate) fn write_svg(w: &mut dyn Write, folded: &[(String, u64)], title: &str) -> fmt::Result {
    let (frames, total) = frames(folded);
    let depth = frames.iter().map(|f| f.depth).max().unwrap_or(0) as u32;
    let height = PAD_TOP + (depth + 1) * ROW + PAD_BOTTOM;
    // The drawing's width in tenths of a pixel.
    let inner = u128::from(WIDTH - 2 * PAD_X) * 10;
    writeln!(w, r#"<?xml version="1.0" standalone="no"?>"#)?;
    writeln!(
        w,
        r#"<svg version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">"#
    )?;
    writeln!(w, r##"<rect x="0" y="0" width="100%" height="100%" fill="#f8f8f0"/>"##)?;
    write!(
        w,
        r#"<text x="{}" y="24" font-family="Verdana,sans-serif" font-size="17" text-anchor="middle">"#,
        WIDTH / 2
    )?;
    escape(w, title)?;
    writeln!(w, "</text>")?;
    if total == 0 {
        writeln!(
            w,
            r#"<text x="{PAD_X}" y="{}" font-family="Verdana,sans-serif" font-size="12">no time recorded</text>"#,
            PAD_TOP + 12
        )?;
        return writeln!(w, "</svg>");
    }
    writeln!(w, r#"<g font-family="Verdana,sans-serif" font-size="12">"#)?;
    for f in &frames {
        let span = f.end.saturating_sub(f.start);
        let tenths = |v: u64| (u128::from(v) * inner / u128::from(total)) as u64;
        let x = u64::from(PAD_X) * 10 + tenths(f.start);
        let width = tenths(span);
        if width < MIN_WIDTH {
            continue;
        }
        let y = height - PAD_BOTTOM - (f.depth as u32 + 1) * ROW;
        let (r, g, b) = colour(f.name);
        w.write_str("<g><title>")?;
        escape(w, f.name)?;
        w.write_str(" (")?;
        micros(w, span)?;
        let per10k = (u128::from(span) * 10_000 / u128::from(total)) as u64;
        writeln!(w, ", {}.{:02}%)</title>", per10k / 100, per10k % 100)?;
        w.write_str(r#"<rect x=""#)?;
        px(w, x)?;
        write!(w, r#"" y="{y}" width=""#)?;
        px(w, width)?;
        writeln!(w, r#"" height="{}" fill="rgb({r},{g},{b})" rx="2" ry="2"/>"#, ROW - 1)?;
        // As many characters as fit, cut with "..".
        let fits = (width.saturating_sub(60) / CHAR_PX) as usize;
        if fits >= 3 {
            w.write_str(r#"<text x=""#)?;
            px(w, x + 30)?;
            write!(w, r#"" y="{}">"#, y + ROW - 4)?;
            let n = f.name.chars().count();
            if n <= fits {
                escape(w, f.name)?;
            } else {
                let cut: String = f.name.chars().take(fits - 2).collect();
                escape(w, &cut)?;
                w.write_str("..")?;
            }
            writeln!(w, "</text>")?;
        }
        writeln!(w, "</g>")?;
    }
    writeln!(w, "</g>")?;
    writeln!(w, "</svg>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn rows(lines: &[(&str, u64)]) -> Vec<(String, u64)> {
        lines.iter().map(|(p, w)| (p.to_string(), *w)).collect()
    }

    #[test]
    fn frames_span_their_inclusive_time() {
        let f = rows(&[("a;b", 30), ("a", 10), ("a;b;c", 20), ("a;d", 40), ("e", 5), ("z", 0)]);
        let (frames, total) = frames(&f);
        assert_eq!(total, 105);
        let find = |name: &str, depth: usize| {
            frames.iter().find(|x| x.name == name && x.depth == depth).map(|x| (x.start, x.end))
        };
        assert_eq!(find("all", 0), Some((0, 105)));
        assert_eq!(find("a", 1), Some((0, 100)));
        assert_eq!(find("b", 2), Some((10, 60)));
        assert_eq!(find("c", 3), Some((40, 60)));
        assert_eq!(find("d", 2), Some((60, 100)));
        assert_eq!(find("e", 1), Some((100, 105)));
        assert_eq!(find("z", 1), None, "zero weights are no box");
        // A child never leaves its parent.
        for c in &frames {
            if c.depth > 1 {
                assert!(frames.iter().any(|p| p.depth == c.depth - 1 && p.start <= c.start && c.end <= p.end), "{c:?}");
            }
        }
    }

    #[test]
    fn svg_is_escaped_and_cut() {
        let long = "a_function_name_far_too_long_for_its_small_box_in_the_picture";
        let f = rows(&[("main;<b&c>", 1_000_000), (&alloc::format!("main;{long}"), 10_000)]);
        let mut s = String::new();
        write_svg(&mut s, &f, "tr-graph \"x\"").unwrap();
        assert!(s.starts_with("<?xml"), "{s}");
        assert!(s.trim_end().ends_with("</svg>"));
        assert!(s.contains("&lt;b&amp;c&gt;"), "{s}");
        assert!(!s.contains("<b&c>"));
        assert!(s.contains("tr-graph &quot;x&quot;"));
        assert!(s.contains("main (1010.000 us, 100.00%)"), "{s}");
        // The long name's box is ~11 px wide: its title holds the name, its
        // text does not.
        assert!(s.contains(&alloc::format!("<title>{long} (10.000 us, 0.99%)</title>")), "{s}");
        assert!(!s.contains(&alloc::format!(">{long}</text>")));
        // Every element that opens closes.
        assert_eq!(s.matches("<g>").count(), s.matches("</g>").count() - 1);
        assert_eq!(s.matches("<text").count(), s.matches("</text>").count());
    }

    #[test]
    fn nothing_to_draw_says_so() {
        let mut s = String::new();
        write_svg(&mut s, &[], "t").unwrap();
        assert!(s.contains("no time recorded"));
        write_svg(&mut s, &rows(&[("a", 0)]), "t").unwrap();
    }
}
