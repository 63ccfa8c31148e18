//! Zone colors, 0xRRGGBB; the values of the C `MPROF_COLOR_*` (include/mprof/mprof.h).
//!
//! The subsystem colors are the convention every engine that adopts mprof shares, so a
//! timeline reads the same in every project: renderer blue, physics green, AI red.

/// No color: the viewer picks one from the zone's name.
pub const DEFAULT: u32 = 0x000000;
/// Renderer zones: blue.
pub const RENDERER: u32 = 0x2f6fde;
/// Physics zones: green.
pub const PHYSICS: u32 = 0x2fa84f;
/// AI zones: red.
pub const AI: u32 = 0xd63a3a;
/// Audio zones: purple.
pub const AUDIO: u32 = 0x9b59d0;
/// Network zones: orange.
pub const NETWORK: u32 = 0xe08a1e;
/// File and asset I/O zones: brown.
pub const IO: u32 = 0x8a6d3b;
/// Job system zones: teal.
pub const JOBS: u32 = 0x22a6b3;
