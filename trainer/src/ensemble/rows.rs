//! How the first layer reads its rows: dense or sparse ([`InputLayout`]), and every member's
//! rows padded to the same count.
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::data::LabeledRows;
use crate::dense::DenseMatrix;

/// How the first layer reads its input.
///
/// The features are l1-normalized TF-IDF vectors: a request has tens of non-zero features out of
/// K = 500. `Sparse` computes the first layer as Σⱼ xⱼ·W[fⱼ] over a row's non-zeros only
/// (`embedding_bag`, mode sum, with the values as per-sample weights, over the flattened
/// `[N·in, out]` weight), which is the same sum as the dense product `x·W` (only the rounding
/// order differs), and so is its gradient (the dense gradient xᵀδ is zero on absent features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputLayout {
    /// `Sparse` when every row has at most a quarter of its features non-zero, else `Dense`.
    Auto,
    /// Dense rows, the first layer a `bmm`.
    Dense,
    /// (index, value) lists padded to the longest row, the first layer an `embedding_bag`.
    Sparse,
}

impl InputLayout {
    /// `Auto` resolved for rows whose longest has `max_nonzeros` of `cols` features non-zero.
    fn resolve(self, max_nonzeros: usize, cols: usize) -> InputLayout {
        match self {
            InputLayout::Auto if max_nonzeros * 4 <= cols => InputLayout::Sparse,
            InputLayout::Auto => InputLayout::Dense,
            other => other,
        }
    }
}

/// The most non-zero features of any row of `rows`.
fn max_nonzeros<'a>(rows: impl IntoIterator<Item = &'a DenseMatrix>) -> usize {
    rows.into_iter()
        .flat_map(|m| m.values.chunks(m.cols.max(1)))
        .map(|row| row.iter().filter(|&&v| v != 0.0).count())
        .max()
        .unwrap_or(0)
}

/// Rows of several members, `[N, B, ..]`, as the first layer reads them.
pub(super) enum Rows {
    /// `[N, B, in]`.
    Dense(Tensor),
    /// `index`, `value`: `[N·B·width]`, row after row, each row's non-zeros padded with value 0
    /// to `width`; an index is `k·in + feature` for member k (a row of the flattened weight).
    Sparse {
        index: Tensor,
        value: Tensor,
        n: i64,
        b: i64,
        width: i64,
    },
}

/// `rows` (row-major, `cols` wide) as sparse rows for each of `members` members (the same
/// rows for every member, indices offset by `k·cols`), or `None` when some row has more than a
/// quarter of its features non-zero (then the dense product is as cheap).
pub(super) fn shared_sparse_rows(rows: &[f32], cols: usize, members: usize) -> Option<Rows> {
    let count = rows.len() / cols.max(1);
    let width = rows
        .chunks(cols.max(1))
        .map(|r| r.iter().filter(|&&v| v != 0.0).count())
        .max()
        .unwrap_or(0)
        .max(1);
    if InputLayout::Auto.resolve(width, cols) != InputLayout::Sparse {
        return None;
    }
    // Padding entries: index 0 (any row of the weight would do) with value 0 add nothing.
    let mut index = vec![0i64; members * count * width];
    let mut value = vec![0f32; members * count * width];
    for (r, row) in rows.chunks(cols).enumerate() {
        for (j, (f, &v)) in row
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .enumerate()
        {
            for k in 0..members {
                let at = (k * count + r) * width + j;
                index[at] = (k * cols + f) as i64;
                value[at] = v;
            }
        }
    }
    Some(Rows::Sparse {
        index: Tensor::from_slice(&index),
        value: Tensor::from_slice(&value),
        n: members as i64,
        b: count as i64,
        width: width as i64,
    })
}

impl Rows {
    pub(super) fn to_device(&self, device: Device) -> Rows {
        match self {
            Rows::Dense(x) => Rows::Dense(x.to_device(device)),
            Rows::Sparse {
                index,
                value,
                n,
                b,
                width,
            } => Rows::Sparse {
                index: index.to_device(device),
                value: value.to_device(device),
                n: *n,
                b: *b,
                width: *width,
            },
        }
    }
}

/// Padded rows as stored: dense `[N·max, in]`, or sparse `index`/`value` `[N·max, width]` with
/// member k's indices already offset by `k·in`.
enum PaddedX {
    Dense(Tensor),
    Sparse { index: Tensor, value: Tensor },
}

/// Pads every member's rows to the same count: `x` (`N·max` rows, flat, for `index_select`),
/// `y` and `w` (1 for a real row, 0 for padding) `[N, max]`.
pub(super) struct Padded {
    x: PaddedX,
    pub(super) y: Tensor,
    pub(super) w: Tensor,
    pub(super) max: usize,
}

impl Padded {
    /// The rows at flat positions `index` (`[N·B]`, member k's in its k-th block of B).
    pub(super) fn select(&self, index: &Tensor, n: i64, b: i64) -> Rows {
        match &self.x {
            PaddedX::Dense(x) => Rows::Dense(x.index_select(0, index).view([n, b, -1])),
            PaddedX::Sparse { index: fi, value } => Rows::Sparse {
                index: fi.index_select(0, index).view([-1]),
                value: value.index_select(0, index).view([-1]),
                n,
                b,
                width: fi.size()[1],
            },
        }
    }

    /// Rows `start..start + len` of every member.
    pub(super) fn narrow(&self, n: i64, start: i64, len: i64) -> Rows {
        let max = self.max as i64;
        match &self.x {
            PaddedX::Dense(x) => Rows::Dense(x.view([n, max, -1]).narrow(1, start, len)),
            PaddedX::Sparse { index, value } => {
                let width = index.size()[1];
                let part = |t: &Tensor| {
                    t.view([n, max, width])
                        .narrow(1, start, len)
                        .contiguous()
                        .view([-1])
                };
                Rows::Sparse {
                    index: part(index),
                    value: part(value),
                    n,
                    b: len,
                    width,
                }
            }
        }
    }
}

pub(super) fn pad(
    sets: &[&LabeledRows],
    weights: &[Option<&[f32]>],
    cols: usize,
    layout: InputLayout,
    device: Device,
) -> Padded {
    let max = sets.iter().map(|s| s.y.len()).max().unwrap_or(0).max(1);
    let n = sets.len();
    let mut y = vec![0f32; n * max];
    let mut w = vec![0f32; n * max];
    for (k, s) in sets.iter().enumerate() {
        for (r, &label) in s.y.iter().enumerate() {
            y[k * max + r] = if label { 1.0 } else { 0.0 };
            w[k * max + r] = weights.get(k).copied().flatten().map_or(1.0, |ws| ws[r]);
        }
    }
    let x = match layout {
        InputLayout::Sparse => {
            let width = max_nonzeros(sets.iter().map(|s| &s.x)).max(1);
            let mut index = vec![0i64; n * max * width];
            let mut value = vec![0f32; n * max * width];
            for (k, s) in sets.iter().enumerate() {
                let base = (k * cols) as i64;
                for r in 0..max {
                    let at = (k * max + r) * width;
                    // Padding entries (and padding rows) point at the member's own row 0 with
                    // value 0: they add nothing and receive no gradient.
                    index[at..at + width].fill(base);
                    if r < s.x.rows {
                        let nonzero = s.x.row(r).iter().enumerate().filter(|(_, &v)| v != 0.0);
                        for (j, (f, &v)) in nonzero.enumerate() {
                            index[at + j] = base + f as i64;
                            value[at + j] = v;
                        }
                    }
                }
            }
            let shape = [(n * max) as i64, width as i64];
            PaddedX::Sparse {
                index: Tensor::from_slice(&index).view(shape).to_device(device),
                value: Tensor::from_slice(&value).view(shape).to_device(device),
            }
        }
        _ if n == 1 && sets[0].x.rows == max => {
            // One member without padding rows (a student, a part model): its rows as they are,
            // one copy instead of zeros plus a copy (4.6 GB each for the part model's rows).
            let s = sets[0];
            PaddedX::Dense(
                Tensor::from_slice(&s.x.values)
                    .view([max as i64, cols as i64])
                    .to_device(device),
            )
        }
        _ => {
            // Zeros, then each member's rows copied into its block: no second full-size copy
            // on the host (1.7 GB for train.yaml's FISTA teachers).
            let x = Tensor::zeros([(n * max) as i64, cols as i64], (Kind::Float, device));
            let _guard = tch::no_grad_guard();
            for (k, s) in sets.iter().enumerate() {
                if s.x.rows > 0 {
                    let rows = Tensor::from_slice(&s.x.values)
                        .view([s.x.rows as i64, cols as i64])
                        .to_device(device);
                    x.narrow(0, (k * max) as i64, s.x.rows as i64).copy_(&rows);
                }
            }
            PaddedX::Dense(x)
        }
    };
    Padded {
        x,
        y: Tensor::from_slice(&y)
            .view([n as i64, max as i64])
            .to_device(device),
        w: Tensor::from_slice(&w)
            .view([n as i64, max as i64])
            .to_device(device),
        max,
    }
}
