//! Cover images as pixels: what an image is ([`probe`]: its format and
//! size from the header alone), the size a cover is scaled to ([`fit`]:
//! aspect kept, never larger than the source), and the scaling itself
//! ([`resize_to_jpeg`]: decode, resize, JPEG out).
//!
//! JPEG sources — nearly every cover — are decoded at a reduced scale
//! (`jpeg-decoder`'s scaled IDCT: 1/2, 1/4 or 1/8 of the size, whichever
//! is the smallest still at least as large as the target), so a
//! 3000×3000 scan becomes 375×375 pixels while it is decoded rather than
//! after: a fraction of the time and memory of a full decode. PNG and
//! WebP are decoded whole by the `image` crate. What is left is resized
//! with a triangle (bilinear) filter and encoded as JPEG at
//! [`JPEG_QUALITY`].
//!
//! Every decode is refused above [`MAX_COVER_PIXELS`], judged from the
//! header before a pixel is decoded, so a small file that claims to be a
//! huge picture (a decompression bomb) costs nothing.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, RgbImage};

/// The largest picture decoded, in pixels: 36 megapixels (6000×6000).
/// The largest covers in real libraries are scans of 4000–6000 pixels a
/// side; above this an image is refused before it is decoded, so one
/// request cannot make the server allocate gigabytes. A PNG at the limit
/// takes about 144 MB while it is decoded.
pub const MAX_COVER_PIXELS: u64 = 36_000_000;

/// Quality of the JPEG covers Spindle makes (0–100): 85, where artefacts
/// are not visible at cover sizes and a 300-pixel cover is 15–30 KiB.
pub const JPEG_QUALITY: u8 = 85;

/// Why an image could not be read or scaled.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("not an image Spindle reads (JPEG, PNG or WebP expected)")]
    UnknownFormat,
    #[error(
        "the image is {width}×{height} pixels, over the limit of {} megapixels \
         (MAX_COVER_PIXELS); it is refused rather than decoded — use a smaller cover",
        MAX_COVER_PIXELS / 1_000_000
    )]
    TooLarge { width: u32, height: u32 },
    #[error("the image cannot be decoded (corrupt or truncated): {0}")]
    Corrupt(String),
    #[error("encoding the resized cover failed: {0}")]
    Encode(String),
}

/// The image formats covers come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
    WebP,
}

impl Format {
    /// Recognises a format by its magic bytes.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Format::WebP)
        } else {
            None
        }
    }

    /// Its MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Format::Jpeg => "image/jpeg",
            Format::Png => "image/png",
            Format::WebP => "image/webp",
        }
    }

    fn image_format(self) -> ImageFormat {
        match self {
            Format::Jpeg => ImageFormat::Jpeg,
            Format::Png => ImageFormat::Png,
            Format::WebP => ImageFormat::WebP,
        }
    }
}

/// What an image is, read from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub format: Format,
    pub width: u32,
    pub height: u32,
}

/// An image's format and size, from its header alone (no pixel decoded).
pub fn probe(bytes: &[u8]) -> Result<Probe, ImageError> {
    let format = Format::sniff(bytes).ok_or(ImageError::UnknownFormat)?;
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format.image_format())
        .into_dimensions()
        .map_err(|e| ImageError::Corrupt(e.to_string()))?;
    if width == 0 || height == 0 {
        return Err(ImageError::Corrupt("the image has no pixels".into()));
    }
    Ok(Probe {
        format,
        width,
        height,
    })
}

/// The size of a cover of `size` pixels made from a `width`×`height`
/// picture: the longer side becomes `size`, the other keeps the aspect
/// (at least 1 pixel); a picture no larger than `size` keeps its own size
/// (covers are never scaled up).
pub fn fit(width: u32, height: u32, size: u32) -> (u32, u32) {
    let long = width.max(height);
    if size == 0 || size >= long {
        return (width, height);
    }
    let scale = |side: u32| {
        let scaled = (u64::from(side) * u64::from(size) + u64::from(long) / 2) / u64::from(long);
        u32::try_from(scaled).unwrap_or(size).max(1)
    };
    if width >= height {
        (size, scale(height))
    } else {
        (scale(width), size)
    }
}

/// A cover made by [`resize_to_jpeg`].
#[derive(Debug, Clone)]
pub struct Resized {
    /// The JPEG file.
    pub data: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// Scales the image in `bytes` so its longer side is `size` pixels (see
/// [`fit`]) and encodes it as JPEG. Refuses images above
/// [`MAX_COVER_PIXELS`] before decoding them.
pub fn resize_to_jpeg(bytes: &[u8], size: u32) -> Result<Resized, ImageError> {
    let p = probe(bytes)?;
    check_pixels(p.width, p.height)?;
    let (w, h) = fit(p.width, p.height, size);
    let decoded = match p.format {
        Format::Jpeg => match decode_jpeg_scaled(bytes, w, h)? {
            Some(img) => img,
            None => decode_whole(bytes, p.format)?,
        },
        Format::Png | Format::WebP => decode_whole(bytes, p.format)?,
    };
    let img = if decoded.dimensions() == (w, h) {
        decoded
    } else {
        image::imageops::resize(&decoded, w, h, FilterType::Triangle)
    };
    let mut data = Vec::with_capacity((w as usize * h as usize) / 4);
    JpegEncoder::new_with_quality(&mut data, JPEG_QUALITY)
        .encode_image(&img)
        .map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(Resized {
        data,
        width: w,
        height: h,
    })
}

fn check_pixels(width: u32, height: u32) -> Result<(), ImageError> {
    if u64::from(width) * u64::from(height) > MAX_COVER_PIXELS {
        return Err(ImageError::TooLarge { width, height });
    }
    Ok(())
}

/// A JPEG decoded at the smallest IDCT scale still at least `w`×`h`.
/// `None` for the pixel formats left to the `image` crate (CMYK, 16-bit
/// grey).
fn decode_jpeg_scaled(bytes: &[u8], w: u32, h: u32) -> Result<Option<RgbImage>, ImageError> {
    let corrupt = |e: jpeg_decoder::Error| ImageError::Corrupt(e.to_string());
    let mut d = jpeg_decoder::Decoder::new(Cursor::new(bytes));
    d.read_info().map_err(corrupt)?;
    let info = d
        .info()
        .ok_or_else(|| ImageError::Corrupt("no JPEG frame header".into()))?;
    check_pixels(u32::from(info.width), u32::from(info.height))?;
    let want = |v: u32| u16::try_from(v).unwrap_or(u16::MAX);
    let (sw, sh) = d.scale(want(w), want(h)).map_err(corrupt)?;
    let pixels = d.decode().map_err(corrupt)?;
    let info = d
        .info()
        .ok_or_else(|| ImageError::Corrupt("no JPEG frame header".into()))?;
    let (sw, sh) = (u32::from(sw), u32::from(sh));
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels,
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&l| [l, l, l]).collect(),
        jpeg_decoder::PixelFormat::CMYK32 | jpeg_decoder::PixelFormat::L16 => return Ok(None),
    };
    RgbImage::from_raw(sw, sh, rgb)
        .map(Some)
        .ok_or_else(|| ImageError::Corrupt("the JPEG decoded to fewer pixels than its size".into()))
}

/// An image decoded whole by the `image` crate, within the pixel limit,
/// transparency flattened onto white (a JPEG has none).
fn decode_whole(bytes: &[u8], format: Format) -> Result<RgbImage, ImageError> {
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_COVER_PIXELS * 8);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits);
    let img = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => ImageError::Corrupt(format!(
            "the image needs more memory to decode than a cover of {} megapixels: {e}",
            MAX_COVER_PIXELS / 1_000_000
        )),
        e => ImageError::Corrupt(e.to_string()),
    })?;
    Ok(flatten(img))
}

fn flatten(img: DynamicImage) -> RgbImage {
    if !img.color().has_alpha() {
        return img.into_rgb8();
    }
    let rgba = img.into_rgba8();
    let (w, h) = rgba.dimensions();
    let mut out = RgbImage::new(w, h);
    for (o, p) in out.pixels_mut().zip(rgba.pixels()) {
        let a = u16::from(p[3]);
        for c in 0..3 {
            let v = (u16::from(p[c]) * a + 255 * (255 - a) + 127) / 255;
            o[c] = u8::try_from(v).unwrap_or(u8::MAX);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test picture: a gradient with a bright square, as `format`.
    pub(crate) fn picture(w: u32, h: u32, format: ImageFormat) -> Vec<u8> {
        let img = RgbImage::from_fn(w, h, |x, y| {
            let inside = x > w / 4 && x < w / 2 && y > h / 4 && y < h / 2;
            if inside {
                image::Rgb([250, 250, 40])
            } else {
                image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, 90])
            }
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(img)
            .write_to(&mut out, format)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn fit_keeps_the_aspect_and_never_scales_up() {
        let cases = [
            ((1500, 1000, 300), (300, 200)),
            ((1000, 1500, 300), (200, 300)),
            ((3000, 3000, 64), (64, 64)),
            ((1500, 1000, 1200), (1200, 800)),
            ((1500, 1000, 1500), (1500, 1000)),
            ((1500, 1000, 4000), (1500, 1000)),
            ((4000, 10, 100), (100, 1)),
            ((10, 4000, 100), (1, 100)),
            ((640, 480, 0), (640, 480)),
        ];
        for ((w, h, size), want) in cases {
            assert_eq!(fit(w, h, size), want, "{w}×{h} to {size}");
        }
    }

    #[test]
    fn resized_covers_keep_the_aspect_with_the_longer_side_at_the_size() {
        for format in [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::WebP] {
            let src = picture(1500, 1000, format);
            for size in [64, 300, 1200] {
                let r = resize_to_jpeg(&src, size).unwrap();
                let got = probe(&r.data).unwrap();
                assert_eq!(got.format, Format::Jpeg, "{format:?}");
                assert_eq!(
                    (got.width, got.height),
                    (size, (size * 2 + 1) / 3),
                    "{format:?} to {size}"
                );
            }
        }
    }

    #[test]
    fn a_size_above_the_source_keeps_the_source_size() {
        let src = picture(200, 120, ImageFormat::Png);
        let r = resize_to_jpeg(&src, 1200).unwrap();
        assert_eq!((r.width, r.height), (200, 120));
        assert_eq!(probe(&r.data).unwrap().width, 200);
    }

    #[test]
    fn the_scaled_jpeg_decode_keeps_the_picture() {
        // The bright square (x, y in 1/4..1/2) must stay where it was.
        let src = picture(3000, 3000, ImageFormat::Jpeg);
        let r = resize_to_jpeg(&src, 300).unwrap();
        let img = image::load_from_memory(&r.data).unwrap().into_rgb8();
        let inside = img.get_pixel(110, 110);
        let outside = img.get_pixel(250, 250);
        assert!(inside[0] > 200 && inside[2] < 100, "{inside:?}");
        assert!(outside[2] > 60 && outside[2] < 120, "{outside:?}");
    }

    #[test]
    fn garbage_and_truncated_images_are_corrupt_not_panics() {
        assert!(matches!(
            resize_to_jpeg(b"not an image at all", 300),
            Err(ImageError::UnknownFormat)
        ));
        let src = picture(800, 800, ImageFormat::Png);
        let cut = &src[..src.len() / 2];
        assert!(matches!(
            resize_to_jpeg(cut, 300),
            Err(ImageError::Corrupt(_))
        ));
        let jpeg = picture(800, 800, ImageFormat::Jpeg);
        assert!(matches!(
            resize_to_jpeg(&jpeg[..40], 300),
            Err(ImageError::Corrupt(_))
        ));
    }

    #[test]
    fn an_image_over_the_pixel_limit_is_refused_before_decoding() {
        // A valid JPEG whose frame header claims 20000×20000 pixels: a
        // few bytes that would decode to 1.2 GB.
        let mut jpeg = picture(8, 8, ImageFormat::Jpeg);
        let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        jpeg[sof + 5..sof + 7].copy_from_slice(&20_000u16.to_be_bytes());
        jpeg[sof + 7..sof + 9].copy_from_slice(&20_000u16.to_be_bytes());
        let err = resize_to_jpeg(&jpeg, 300).unwrap_err();
        assert!(
            matches!(
                err,
                ImageError::TooLarge {
                    width: 20_000,
                    height: 20_000
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("36 megapixels"), "{err}");
    }

    #[test]
    fn transparency_is_flattened_onto_white() {
        let img = image::RgbaImage::from_pixel(4, 4, image::Rgba([0, 0, 0, 0]));
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgba8(img)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        let flat = decode_whole(out.get_ref(), Format::Png).unwrap();
        assert_eq!(flat.get_pixel(1, 1), &image::Rgb([255, 255, 255]));
    }
}
