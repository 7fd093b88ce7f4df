//! The renderer's output image ([`Image`], RGBA8, x fastest, row 0 at the bottom as in the SDK's
//! OpenGL buffer), how two images differ, and its PNG.

use crate::StudyError;
use std::path::Path;

/// An RGBA8 image, x fastest; row 0 is the bottom row (v = -1), as the kernel writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// How two images differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageDiff {
    /// The largest difference of any channel of any pixel.
    pub max_channel_diff: u8,
    /// Pixels with any channel different.
    pub pixels_differing: usize,
}

impl Image {
    /// An image from the kernel's output buffer (one little-endian u32 per pixel = R, G, B, A).
    pub fn from_rgba(width: u32, height: u32, rgba: Vec<u8>) -> Image {
        Image {
            width,
            height,
            rgba,
        }
    }

    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// Channel-wise comparison; images of different sizes differ everywhere.
    pub fn diff(&self, other: &Image) -> ImageDiff {
        if (self.width, self.height) != (other.width, other.height)
            || self.rgba.len() != other.rgba.len()
        {
            return ImageDiff {
                max_channel_diff: u8::MAX,
                pixels_differing: (self.width as usize * self.height as usize)
                    .max(other.width as usize * other.height as usize),
            };
        }
        let mut max = 0u8;
        let mut pixels = 0;
        for (a, b) in self.rgba.chunks_exact(4).zip(other.rgba.chunks_exact(4)) {
            let d = a
                .iter()
                .zip(b)
                .map(|(x, y)| x.abs_diff(*y))
                .max()
                .unwrap_or(0);
            max = max.max(d);
            pixels += usize::from(d > 0);
        }
        ImageDiff {
            max_channel_diff: max,
            pixels_differing: pixels,
        }
    }

    /// Writes a PNG, top row first (so row `height-1` of the buffer is at the top, as the SDK shows
    /// it), through a temp file and a rename.
    pub fn write_png(&self, path: &Path) -> Result<(), StudyError> {
        let png_err = |e: png::EncodingError| StudyError::Png {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut flipped = Vec::with_capacity(self.rgba.len());
        let row = self.width as usize * 4;
        for y in (0..self.height as usize).rev() {
            flipped.extend_from_slice(&self.rgba[y * row..(y + 1) * row]);
        }
        let mut bytes = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut bytes, self.width, self.height);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().map_err(png_err)?;
            w.write_image_data(&flipped).map_err(png_err)?;
            w.finish().map_err(png_err)?;
        }
        Ok(trace::write_bytes_atomic(path, &bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_diff_and_write_png() {
        let a = Image::from_rgba(2, 1, vec![0, 0, 0, 0, 10, 20, 30, 40]);
        let mut b = a.clone();
        b.rgba[5] = 23;
        assert_eq!(
            a.diff(&b),
            ImageDiff {
                max_channel_diff: 3,
                pixels_differing: 1
            }
        );
        assert_eq!(a.diff(&a).pixels_differing, 0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.png");
        a.write_png(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (2, 1));
    }
}
