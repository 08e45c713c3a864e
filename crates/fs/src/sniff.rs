//! What kind of file this is, from its first bytes and its name: a few
//! magic numbers and ripgrep's NUL heuristic, small enough to keep here
//! rather than pull in a detection crate.

use std::path::Path;

/// How much of a file's start is inspected; the same window ripgrep uses.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// What read_file does with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Shown as numbered lines.
    Text,
    /// Returned as an image part with this MIME type.
    Image(&'static str),
    /// Described: a PDF.
    Pdf,
    /// Described, never dumped. `what` names the format when a magic
    /// number gives it away; `nul_at` is the first NUL byte.
    Binary {
        what: Option<&'static str>,
        nul_at: usize,
    },
    /// Bytes that are not UTF-8 (Latin-1, UTF-16 without NULs early on,
    /// random data): described, with where the first bad byte is.
    NotUtf8 {
        what: Option<&'static str>,
        bad_at: usize,
    },
}

const IMAGE_MAGIC: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
];

const BINARY_MAGIC: &[(&[u8], &str)] = &[
    (b"\x7fELF", "ELF executable or library"),
    (b"PK\x03\x04", "zip archive (or jar, docx, xlsx, ...)"),
    (b"\x1f\x8b", "gzip data"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"BZh", "bzip2 data"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x00asm", "WebAssembly module"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal binary or Java class"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"MZ", "Windows executable"),
];

fn image_by_extension(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        _ => return None,
    })
}

/// Classifies a file from its first [`SNIFF_BYTES`] bytes (`head`), its
/// name, and whether `head` is the whole file.
pub(crate) fn classify(path: &Path, head: &[u8], whole: bool) -> Kind {
    for (magic, mime) in IMAGE_MAGIC {
        if head.starts_with(magic) {
            return Kind::Image(mime);
        }
    }
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Kind::Image("image/webp");
    }
    // `BM` alone is too weak; a BMP header also has four reserved zero
    // bytes, which no text file has.
    if head.len() >= 14 && head.starts_with(b"BM") && head[6..10] == [0, 0, 0, 0] {
        return Kind::Image("image/bmp");
    }
    if head.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    if let Some(mime) = image_by_extension(path) {
        return Kind::Image(mime);
    }
    let is_pdf_name = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("pdf"));
    if is_pdf_name && !head.is_empty() && std::str::from_utf8(head).is_err() {
        return Kind::Pdf;
    }
    let what = BINARY_MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, what)| *what);
    if let Some(nul_at) = memchr::memchr(0, head) {
        return Kind::Binary { what, nul_at };
    }
    if let Err(error) = std::str::from_utf8(head) {
        // A multi-byte character cut by the end of the window is fine; an
        // incomplete one at the real end of the file is not.
        if error.error_len().is_some() || whole {
            return Kind::NotUtf8 {
                what,
                bad_at: error.valid_up_to(),
            };
        }
    }
    // A text file may well start with "MZ" or "BZh": the magic numbers
    // above only name a format once the bytes are known not to be text.
    Kind::Text
}

/// Width and height of a PNG, GIF or JPEG, read from its header, so the
/// model knows what it is looking at before it decodes anything.
pub(crate) fn image_dimensions(data: &[u8]) -> Option<(u32, u32)> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") && data.len() >= 24 {
        let w = u32::from_be_bytes(data[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(data[20..24].try_into().ok()?);
        return Some((w, h));
    }
    if data.starts_with(b"GIF8") && data.len() >= 10 {
        let w = u16::from_le_bytes([data[6], data[7]]) as u32;
        let h = u16::from_le_bytes([data[8], data[9]]) as u32;
        return Some((w, h));
    }
    if data.starts_with(b"\xff\xd8") {
        // Walk the JPEG segments to the first start-of-frame marker.
        let mut i = 2;
        while i + 9 < data.len() {
            if data[i] != 0xff {
                return None;
            }
            let marker = data[i + 1];
            if marker == 0xff {
                i += 1;
                continue;
            }
            let length = u16::from_be_bytes([data[i + 2], data[i + 3]]) as usize;
            let is_sof = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
            if is_sof {
                let h = u16::from_be_bytes([data[i + 5], data[i + 6]]) as u32;
                let w = u16::from_be_bytes([data[i + 7], data[i + 8]]) as u32;
                return Some((w, h));
            }
            i += 2 + length;
        }
    }
    None
}

/// The page count of a PDF when it can be had without a PDF parser: the
/// number of `/Type /Page` objects. Compressed object streams hide them,
/// in which case the count is unknown rather than wrong.
pub(crate) fn pdf_pages(data: &[u8]) -> Option<usize> {
    let finder = memchr::memmem::Finder::new(b"/Type");
    let mut pages = 0;
    for at in finder.find_iter(data) {
        let mut rest = &data[at + 5..];
        while let Some((first, tail)) = rest.split_first() {
            if first.is_ascii_whitespace() {
                rest = tail;
            } else {
                break;
            }
        }
        if let Some(after) = rest.strip_prefix(b"/Page")
            && !after.first().is_some_and(|b| b.is_ascii_alphanumeric())
        {
            pages += 1;
        }
    }
    (pages > 0).then_some(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_win_over_names() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x02\x80\0\0\x01\xe0";
        assert_eq!(
            classify(Path::new("x.bin"), png, true),
            Kind::Image("image/png")
        );
        assert_eq!(image_dimensions(png), Some((640, 480)));
        assert_eq!(
            classify(Path::new("photo.JPG"), b"", true),
            Kind::Image("image/jpeg")
        );
        assert_eq!(classify(Path::new("a.txt"), b"%PDF-1.7\n", true), Kind::Pdf);
        assert_eq!(
            classify(Path::new("a.rs"), b"fn main() {}\n", true),
            Kind::Text
        );
        // Text that happens to start with a weak magic number stays text.
        assert_eq!(
            classify(Path::new("notes"), b"BMW and MZ\n", true),
            Kind::Text
        );
    }

    #[test]
    fn nul_bytes_and_bad_utf8_are_binary() {
        assert_eq!(
            classify(Path::new("a.out"), b"\x7fELF\x02\0", true),
            Kind::Binary {
                what: Some("ELF executable or library"),
                nul_at: 5
            }
        );
        assert_eq!(
            classify(Path::new("latin1.txt"), b"caf\xe9 au lait", true),
            Kind::NotUtf8 {
                what: None,
                bad_at: 3
            }
        );
        // "é" cut in half by the sniff window is still text...
        assert_eq!(classify(Path::new("a.txt"), b"caf\xc3", false), Kind::Text);
        // ...but not at the real end of the file.
        assert!(matches!(
            classify(Path::new("a.txt"), b"caf\xc3", true),
            Kind::NotUtf8 { bad_at: 3, .. }
        ));
    }

    #[test]
    fn pdf_pages_are_counted_when_visible() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >>\n2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page/Parent 1 0 R>>";
        assert_eq!(pdf_pages(pdf), Some(2));
        assert_eq!(pdf_pages(b"%PDF-1.7\n stream of compressed objects"), None);
    }
}
