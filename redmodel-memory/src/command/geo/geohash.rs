//! Geohashes as Redis 7.0 computes them (`geohash.c`, `geohash_helper.c`):
//! a point is 26 bits of latitude and 26 of longitude, interleaved into a
//! 52-bit integer that is the point's score in its sorted set, so that the
//! points of one geohash cell are one score range. A search covers its
//! shape with the cell around the centre and its eight neighbours, at the
//! largest cell size that still holds the shape, and then checks each
//! point's distance. Every constant and rounding step follows Redis, so
//! that scores, coordinates and distances match a real server's to the
//! last bit.

/// Bits per coordinate: 26 of each, 52 in all (a double holds 53).
pub(super) const STEP_MAX: u8 = 26;
pub(super) const LAT_MIN: f64 = -85.051_128_78;
pub(super) const LAT_MAX: f64 = 85.051_128_78;
pub(super) const LONG_MIN: f64 = -180.0;
pub(super) const LONG_MAX: f64 = 180.0;

/// Earth's quadratic mean radius for WGS-84, as Redis uses it.
const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;
/// Redis's `D_R` (`M_PI / 180.0`), for degrees to radians.
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A coordinate interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Range {
    pub(super) min: f64,
    pub(super) max: f64,
}

/// The ranges points are stored in: Web Mercator's latitudes (no poles).
pub(super) const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub(super) const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A geohash of `step` bits per coordinate; all zero is "no cell" (an
/// excluded neighbour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Hash {
    pub(super) bits: u64,
    pub(super) step: u8,
}

impl Hash {
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The hash as a 52-bit score (`geohashAlign52Bits`).
    pub(super) fn align52(self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// A cell: its latitude and longitude intervals.
#[derive(Debug, Clone, Copy)]
pub(super) struct Area {
    pub(super) lat: Range,
    pub(super) long: Range,
}

/// Spreads `lat`'s bits over the even positions and `long`'s over the odd
/// ones.
fn interleave(lat: u32, long: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(lat) | (spread(long) << 1)
}

/// [`interleave`] undone: (latitude bits, longitude bits).
fn deinterleave(bits: u64) -> (u32, u32) {
    fn squeeze(v: u64) -> u32 {
        let mut v = v & 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF;
        v as u32
    }
    (squeeze(bits), squeeze(bits >> 1))
}

/// Whether a longitude and latitude can be stored (Redis's "invalid
/// longitude,latitude pair" otherwise).
pub(super) fn valid(long: f64, lat: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&long) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The cell of `step` bits holding the point, in the given ranges
/// (`geohashEncode`); `None` outside them or Redis's limits.
pub(super) fn encode(
    long_range: Range,
    lat_range: Range,
    long: f64,
    lat: f64,
    step: u8,
) -> Option<Hash> {
    if step == 0 || step > 32 || !valid(long, lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || long < long_range.min || long > long_range.max
    {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let long_offset = (long - long_range.min) / (long_range.max - long_range.min) * cells;
    // C converts the offsets to `uint32_t` by truncation.
    Some(Hash {
        bits: interleave(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// The point's 52-bit score, `None` for an invalid point.
pub(super) fn score_of(long: f64, lat: f64) -> Option<u64> {
    encode(LONG_RANGE, LAT_RANGE, long, lat, STEP_MAX).map(Hash::align52)
}

/// The cell a hash names, in the given ranges (`geohashDecode`).
pub(super) fn decode(long_range: Range, lat_range: Range, hash: Hash) -> Area {
    let (ilat, ilong) = deinterleave(hash.bits);
    let cells = (1u64 << hash.step) as f64;
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    Area {
        lat: Range {
            min: lat_range.min + (f64::from(ilat) / cells) * lat_scale,
            max: lat_range.min + ((f64::from(ilat) + 1.0) / cells) * lat_scale,
        },
        long: Range {
            min: long_range.min + (f64::from(ilong) / cells) * long_scale,
            max: long_range.min + ((f64::from(ilong) + 1.0) / cells) * long_scale,
        },
    }
}

/// The point a score stands for: its cell's centre, clamped to the
/// limits (`decodeGeohash`), as `[longitude, latitude]`.
pub(super) fn point_of(score: f64) -> [f64; 2] {
    // C's `(uint64_t)` of the double: a negative score (not one GEOADD
    // writes) wraps as x86-64 converts it.
    let bits = if score < 0.0 {
        score as i64 as u64
    } else {
        score as u64
    };
    let area = decode(
        LONG_RANGE,
        LAT_RANGE,
        Hash {
            bits,
            step: STEP_MAX,
        },
    );
    let long = ((area.long.min + area.long.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [long, lat]
}

/// GEOHASH's 11 characters for a point: its cell re-encoded over the
/// standard ranges (latitudes from -90 to 90), in geohash's base 32; the
/// last character is always `0`, as Redis writes it.
pub(super) fn standard_text(long: f64, lat: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let world = (
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
    );
    let bits = encode(world.0, world.1, long, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

/// Longitude's bits (the odd positions) and latitude's (the even ones).
const LONG_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const LAT_BITS: u64 = 0x5555_5555_5555_5555;

/// The cell `d` steps along the coordinate whose bits are `ours` (east
/// for longitude, north for latitude; back for a negative `d`): that
/// coordinate's bits counted up or down as one number, through the other's
/// (Redis's `geohash_move_x` and `geohash_move_y`).
fn step_along(hash: Hash, d: i8, ours: u64) -> Hash {
    if d == 0 {
        return hash;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    // The other coordinate's bits, set, carry a count across them.
    let through = !ours >> shift;
    let mut mine = hash.bits & ours;
    mine = if d > 0 {
        mine.wrapping_add(through + 1)
    } else {
        (mine | through).wrapping_sub(through + 1)
    };
    Hash {
        bits: (mine & (ours >> shift)) | (hash.bits & !ours),
        step: hash.step,
    }
}

/// The cells to search, in Redis's order: the centre, north, south, east,
/// west, north-east, north-west, south-east, south-west. An excluded
/// neighbour is the zero hash.
fn neighbours(hash: Hash) -> [Hash; 9] {
    let moved = |dx: i8, dy: i8| step_along(step_along(hash, dx, LONG_BITS), dy, LAT_BITS);
    [
        hash,
        moved(0, 1),
        moved(0, -1),
        moved(1, 0),
        moved(-1, 0),
        moved(1, 1),
        moved(-1, 1),
        moved(1, -1),
        moved(-1, -1),
    ]
}

// The neighbours' places in `neighbours`' array (the centre is 0).
const NORTH: usize = 1;
const SOUTH: usize = 2;
const EAST: usize = 3;
const WEST: usize = 4;
const NORTH_EAST: usize = 5;
const NORTH_WEST: usize = 6;
const SOUTH_EAST: usize = 7;
const SOUTH_WEST: usize = 8;

/// What a search looks for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// Within this radius of the centre.
    Radius(f64),
    /// Within a box this wide and high around the centre.
    Box { width: f64, height: f64 },
}

/// A search shape: its centre (`[longitude, latitude]`), its kind, and
/// the factor from its unit to metres.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) center: [f64; 2],
    pub(super) kind: Kind,
    pub(super) conversion: f64,
}

fn deg_rad(angle: f64) -> f64 {
    angle * D_R
}

fn rad_deg(angle: f64) -> f64 {
    angle / D_R
}

/// The step whose cells hold a circle of `range` metres at `lat`
/// (`geohashEstimateStepsByRadius`).
fn steps_for_radius(mut range: f64, lat: f64) -> u8 {
    if range == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    // Make sure the range is included in most of the base cases.
    step -= 2;
    // Wider cells towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

impl Shape {
    /// `[min longitude, min latitude, max longitude, max latitude]` of the
    /// shape (`geohashBoundingBox`).
    fn bounds(&self) -> [f64; 4] {
        let [long, lat] = self.center;
        let (height, width) = match self.kind {
            Kind::Radius(r) => (self.conversion * r, self.conversion * r),
            Kind::Box { width, height } => (
                self.conversion * (height / 2.0),
                self.conversion * (width / 2.0),
            ),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(lat + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(lat - lat_delta).cos());
        // The hemispheres are mirrored: the wider edge is the one nearer
        // the equator.
        let long_delta = if lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            long - long_delta,
            lat - lat_delta,
            long + long_delta,
            lat + lat_delta,
        ]
    }

    /// The cells to search, in Redis's order, excluded ones zero
    /// (`geohashCalculateAreasByShapeWGS84`).
    pub(super) fn cells(&self) -> [Hash; 9] {
        let [min_long, min_lat, max_long, max_lat] = self.bounds();
        let [long, lat] = self.center;
        // The distance from the centre to the farthest point of the shape.
        let radius = match self.kind {
            Kind::Radius(r) => r,
            Kind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = steps_for_radius(radius, lat);
        let at = |steps| {
            let hash = encode(LONG_RANGE, LAT_RANGE, long, lat, steps).unwrap_or_default();
            (neighbours(hash), decode(LONG_RANGE, LAT_RANGE, hash))
        };
        let (mut cells, mut area) = at(steps);
        // Near a cell's edge the estimated step may be too fine for a
        // neighbour to reach past the shape: one step coarser then.
        let reach = |h: Hash| decode(LONG_RANGE, LAT_RANGE, h);
        let too_fine = reach(cells[NORTH]).lat.max < max_lat
            || reach(cells[SOUTH]).lat.min > min_lat
            || reach(cells[EAST]).long.max < max_long
            || reach(cells[WEST]).long.min > min_long;
        if steps > 1 && too_fine {
            steps -= 1;
            (cells, area) = at(steps);
        }
        // Leave out the neighbours the shape does not reach.
        if steps >= 2 {
            let mut exclude =
                |sides: [usize; 3]| sides.iter().for_each(|&i| cells[i] = Hash::default());
            if area.lat.min < min_lat {
                exclude([SOUTH, SOUTH_WEST, SOUTH_EAST]);
            }
            if area.lat.max > max_lat {
                exclude([NORTH, NORTH_EAST, NORTH_WEST]);
            }
            if area.long.min < min_long {
                exclude([WEST, SOUTH_WEST, NORTH_WEST]);
            }
            if area.long.max > max_long {
                exclude([EAST, SOUTH_EAST, NORTH_EAST]);
            }
        }
        cells
    }

    /// The distance in metres from the centre to `point`, if the point is
    /// in the shape (`geoWithinShape`).
    pub(super) fn distance_within(&self, point: [f64; 2]) -> Option<f64> {
        let [x1, y1] = self.center;
        let [x2, y2] = point;
        match self.kind {
            Kind::Radius(r) => {
                let d = distance(x1, y1, x2, y2);
                (d <= r * self.conversion).then_some(d)
            }
            Kind::Box { width, height } => {
                // The latitude's distance is the cheaper: checked first.
                if lat_distance(y2, y1) > height * self.conversion / 2.0 {
                    return None;
                }
                if distance(x2, y2, x1, y2) > width * self.conversion / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, x2, y2))
            }
        }
    }
}

/// The scores of a cell's points: from its aligned hash (included) to the
/// next cell's (excluded) (`scoresOfGeoHashBox`); `None` for an excluded
/// neighbour.
pub(super) fn score_range(cell: Hash) -> Option<(f64, f64)> {
    if cell.is_zero() {
        return None;
    }
    let next = Hash {
        bits: cell.bits + 1,
        step: cell.step,
    };
    Some((cell.align52() as f64, next.align52() as f64))
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in metres between two points
/// (`geohashGetDistance`).
pub(super) fn distance(long1: f64, lat1: f64, long2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(long2) - deg_rad(long1)) / 2.0).sin();
    // The same meridian: the latitudes' difference alone.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for (lat, long) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            assert_eq!(deinterleave(interleave(lat, long)), (lat, long));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    /// Figures from Redis's documentation and its tests (geo.tcl).
    #[test]
    fn scores_points_and_hashes_are_redis_s() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo".
        assert_eq!(score_of(13.361389, 38.115556), Some(3_479_099_956_230_698));
        let [long, lat] = point_of(3_479_099_956_230_698.0);
        assert_eq!((long, lat), (13.361_389_338_970_184, 38.115_556_395_496_3));
        assert_eq!(&standard_text(long, lat), b"sqc8b49rny0");
        let catania = point_of(score_of(15.087269, 37.502669).unwrap_or(0) as f64);
        let d = distance(long, lat, catania[0], catania[1]);
        assert_eq!(format!("{d:.4}"), "166274.1516");
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn neighbours_are_the_adjacent_cells() {
        let center = encode(LONG_RANGE, LAT_RANGE, 15.0, 37.0, 10).unwrap_or_default();
        let area = |h| decode(LONG_RANGE, LAT_RANGE, h);
        let cells = neighbours(center);
        let c = area(center);
        assert_eq!(area(cells[NORTH]).lat.min, c.lat.max);
        assert_eq!(area(cells[SOUTH]).lat.max, c.lat.min);
        assert_eq!(area(cells[EAST]).long.min, c.long.max);
        assert_eq!(area(cells[WEST]).long.max, c.long.min);
        assert_eq!(area(cells[SOUTH_WEST]).long.max, c.long.min);
        assert_eq!(area(cells[SOUTH_WEST]).lat.max, c.lat.min);
        assert_eq!(area(cells[NORTH_EAST]).lat.min, c.lat.max);
    }

    #[test]
    fn a_cell_and_its_neighbours_cover_the_shape() {
        let shape = Shape {
            center: [15.0, 37.0],
            kind: Kind::Radius(200.0),
            conversion: 1000.0,
        };
        let cells = shape.cells();
        assert!(!cells[0].is_zero());
        let [min_long, min_lat, max_long, max_lat] = shape.bounds();
        let areas: Vec<Area> = cells
            .iter()
            .filter(|c| !c.is_zero())
            .map(|&c| decode(LONG_RANGE, LAT_RANGE, c))
            .collect();
        assert!(areas.iter().any(|a| a.lat.min <= min_lat));
        assert!(areas.iter().any(|a| a.lat.max >= max_lat));
        assert!(areas.iter().any(|a| a.long.min <= min_long));
        assert!(areas.iter().any(|a| a.long.max >= max_long));
    }
}
