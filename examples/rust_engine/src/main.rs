//! rust_engine: a small frame loop instrumented with the mprof crate, the Rust counterpart of
//! the C sample engine (examples/engine, docs/ENGINE.md).
//!
//! Each frame runs the subsystems in their mprof colors: physics integrates bodies (green), AI
//! agents steer towards targets (red), the renderer rasterises the bodies into a frame buffer
//! (blue), the audio mixer mixes voices (purple), and a job system of worker threads takes
//! grains from one `mprof::Mutex` queue (teal), which is where contention shows. A loader runs
//! as a cooperative task marked with fiber enter/leave. Plots: entities, draw calls, voices,
//! frame time. Messages: start-up, level loaded, slow frames.
//!
//! cargo run --release --features profiling -- --frames 300 --capture run.mprof
//! mprof report run.mprof
//!
//! Built with `--features shipping` (and without `profiling`) every macro is gone and the
//! binary references no mprof symbol; `--features 'shipping profiling'` does not compile.
use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar};
use std::time::{Duration, Instant};

use mprof::color;

#[cfg(feature = "profiling")]
#[global_allocator]
static HEAP: mprof::Allocator = mprof::allocator!("engine-heap");

const USAGE: &str = "usage: rust_engine [--frames N] [--capture PATH] [--threads N]

A small frame loop instrumented with the mprof crate.

  --frames N       run N frames (default 120)
  --capture PATH   write a capture to PATH (else MPROF_CAPTURE, else listen for mprof capture)
  --threads N      worker threads of the job system (default 2, at most 16)
  -h, --help       this help

Exit status: 0 ok, 2 usage error, 3 the profiler did not start.
";

struct Options {
    frames: u64,
    capture: Option<String>,
    threads: usize,
}

fn parse_args() -> Options {
    let mut o = Options { frames: 120, capture: None, threads: 2 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |flag: &str| {
            args.next().unwrap_or_else(|| {
                eprintln!("rust_engine: {} needs a value (see --help)", flag);
                exit(2)
            })
        };
        match a.as_str() {
            "-h" | "--help" => {
                print!("{}", USAGE);
                exit(0)
            }
            "--frames" => o.frames = number("--frames", &value("--frames"), 1, u64::MAX),
            "--threads" => o.threads = number("--threads", &value("--threads"), 1, 16) as usize,
            "--capture" => o.capture = Some(value("--capture")),
            other => {
                eprintln!("rust_engine: unknown option '{}' (see --help)", other);
                exit(2)
            }
        }
    }
    o
}

fn number(flag: &str, s: &str, min: u64, max: u64) -> u64 {
    match s.parse::<u64>() {
        Ok(n) if n >= min && n <= max => n,
        _ => {
            eprintln!("rust_engine: {} '{}': expected a number from {} to {}", flag, s, min, max);
            exit(2)
        }
    }
}

// ---- the world -------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Body {
    pos: [f32; 2],
    vel: [f32; 2],
}

struct World {
    bodies: Vec<Body>,
    agents: Vec<[f32; 2]>,
    seed: u64,
}

impl World {
    fn new(n_bodies: usize, n_agents: usize) -> World {
        let mut w = World { bodies: Vec::with_capacity(n_bodies), agents: Vec::new(), seed: 1 };
        for _ in 0..n_bodies {
            let (x, y) = (w.rand(), w.rand());
            let (vx, vy) = (w.rand() - 0.5, w.rand() - 0.5);
            w.bodies.push(Body { pos: [x, y], vel: [vx, vy] });
        }
        for _ in 0..n_agents {
            let p = [w.rand(), w.rand()];
            w.agents.push(p);
        }
        w
    }

    /// xorshift: the same world on every run.
    fn rand(&mut self) -> f32 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed % 10_000) as f32 / 10_000.0
    }
}

fn physics_step(w: &mut World, dt: f32) {
    mprof::zone!("Physics::step", color::PHYSICS);
    {
        mprof::zone!("Physics::integrate", color::PHYSICS);
        for b in &mut w.bodies {
            b.vel[1] -= 0.5 * dt;
            for k in 0..2 {
                b.pos[k] += b.vel[k] * dt;
                if b.pos[k] < 0.0 || b.pos[k] > 1.0 {
                    b.vel[k] = -b.vel[k] * 0.9;
                    b.pos[k] = b.pos[k].max(0.0).min(1.0);
                }
            }
        }
    }
    mprof::zone!("Physics::collide", color::PHYSICS);
    let n = w.bodies.len().min(256);
    for i in 0..n {
        for j in i + 1..n {
            let d = [w.bodies[i].pos[0] - w.bodies[j].pos[0], w.bodies[i].pos[1] - w.bodies[j].pos[1]];
            if d[0] * d[0] + d[1] * d[1] < 1e-4 {
                w.bodies.swap(i, j);
            }
        }
    }
}

fn ai_think(w: &mut World) {
    mprof::zone!("Souls::think", color::AI);
    let target = w.bodies[0].pos;
    for a in &mut w.agents {
        mprof::zone!("Souls::steer", color::AI);
        for k in 0..2 {
            a[k] += (target[k] - a[k]) * 0.05;
        }
    }
}

const FB_W: usize = 160;
const FB_H: usize = 90;

/// Returns the draw calls issued.
fn render(w: &World, fb: &mut [u32]) -> u64 {
    mprof::zone!("Renderer::frame", color::RENDERER);
    {
        mprof::zone!("Renderer::clear", color::RENDERER);
        for p in fb.iter_mut() {
            *p = 0x101020;
        }
    }
    mprof::zone!("Renderer::draw", color::RENDERER);
    let mut calls = 0;
    for chunk in w.bodies.chunks(64) {
        calls += 1;
        for b in chunk {
            let x = (b.pos[0] * (FB_W - 1) as f32) as usize;
            let y = (b.pos[1] * (FB_H - 1) as f32) as usize;
            fb[y * FB_W + x] = 0xffffff;
        }
    }
    calls
}

fn mix_audio(frame: u64, out: &mut [f32]) -> u64 {
    mprof::zone!("Audio::mix", color::AUDIO);
    let voices = 4 + frame % 5;
    let n = out.len();
    for (i, s) in out.iter_mut().enumerate() {
        let t = (frame as usize * n + i) as f32 / 48_000.0;
        *s = (0..voices).map(|v| (t * 220.0 * (v + 1) as f32).sin()).sum::<f32>() / voices as f32;
    }
    voices
}

// ---- the job system --------------------------------------------------------------------------

/// Grains of work for the workers: a count of pending grains behind one lock, and a condvar
/// that tells the main thread when they are done.
struct Jobs {
    queue: mprof::Mutex<u64>,
    done: std::sync::Mutex<u64>,
    done_cv: Condvar,
    quit: AtomicBool,
    checksum: AtomicU64,
}

fn worker(jobs: Arc<Jobs>, index: usize) {
    mprof::thread_name!(format!("worker {}", index));
    while !jobs.quit.load(Ordering::Acquire) {
        let grain = {
            let mut q = jobs.queue.lock().unwrap();
            if *q == 0 {
                None
            } else {
                *q -= 1;
                Some(*q)
            }
        };
        match grain {
            // Idle: nap instead of spinning, so the workers leave the CPU to the main thread.
            None => std::thread::sleep(Duration::from_micros(50)),
            Some(g) => {
                mprof::zone!("Jobs::grain", color::JOBS);
                let mut x = g;
                for _ in 0..2_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                jobs.checksum.fetch_add(x & 0xff, Ordering::Relaxed);
                *jobs.done.lock().unwrap() += 1;
                jobs.done_cv.notify_one();
            }
        }
    }
}

fn run_jobs(jobs: &Jobs, grains: u64) {
    mprof::zone!("Jobs::parallel_for", color::JOBS);
    *jobs.done.lock().unwrap() = 0;
    *jobs.queue.lock().unwrap() += grains;
    let mut done = jobs.done.lock().unwrap();
    while *done < grains {
        done = jobs.done_cv.wait(done).unwrap();
    }
}

/// The loader: a cooperative task that streams one "chunk" per frame while it has work,
/// marked as a fiber so its runs form one track in the capture.
fn loader_step(frame: u64) -> bool {
    mprof::fiber_enter!("loader");
    let more = {
        mprof::zone!("Loader::stream_chunk", color::IO);
        let chunk: Vec<u8> = (0..4096u32).map(|i| (i as u64 ^ frame) as u8).collect();
        chunk.iter().map(|&b| b as u64).sum::<u64>() > 0 && frame < 30
    };
    mprof::fiber_leave!();
    more
}

fn main() {
    let o = parse_args();
    let cfg = mprof::Config {
        capture_path: o.capture.as_ref().map(|p| p.into()),
        app_name: Some("rust_engine".to_string()),
        ..Default::default()
    };
    if let Err(e) = mprof::startup(&cfg) {
        eprintln!("rust_engine: {}", e);
        exit(3);
    }
    mprof::thread_name!("main");
    mprof::app_info!("rust_engine: {} frames, {} worker threads", o.frames, o.threads);
    mprof::message!(mprof::Level::Info, "rust_engine starting");

    let jobs = Arc::new(Jobs {
        queue: mprof::mutex!("JobQueue", 0),
        done: std::sync::Mutex::new(0),
        done_cv: Condvar::new(),
        quit: AtomicBool::new(false),
        checksum: AtomicU64::new(0),
    });
    let workers: Vec<_> = (0..o.threads)
        .map(|i| {
            let j = Arc::clone(&jobs);
            std::thread::spawn(move || worker(j, i))
        })
        .collect();

    let mut world = World::new(2_000, 64);
    let mut fb = vec![0u32; FB_W * FB_H];
    let mut audio = vec![0f32; 800];
    let mut loading = true;
    let mut slow_frames = 0u64;
    for frame in 0..o.frames {
        let start = Instant::now();
        {
            mprof::zone!("Kernel::frame");
            if loading {
                loading = loader_step(frame);
                if !loading {
                    mprof::message!(mprof::Level::Info, "level loaded at frame {}", frame);
                }
            }
            physics_step(&mut world, 1.0 / 60.0);
            ai_think(&mut world);
            run_jobs(&jobs, 16);
            let calls = render(&world, &mut fb);
            let voices = mix_audio(frame, &mut audio);
            mprof::plot_int!("entities", world.bodies.len() + world.agents.len());
            mprof::plot_int!("draw_calls", calls);
            mprof::plot_int!("voices", voices);
        }
        let ms = start.elapsed().as_secs_f64() * 1e3;
        mprof::plot!("frame_ms", ms);
        if ms > 50.0 {
            slow_frames += 1;
            mprof::message!(mprof::Level::Warn, "slow frame {}: {:.1} ms", frame, ms);
        }
        mprof::frame_mark!();
    }

    jobs.quit.store(true, Ordering::Release);
    for w in workers {
        w.join().unwrap();
    }
    mprof::shutdown();
    println!(
        "rust_engine: {} frames, {} slow, checksum {}, profiling {}",
        o.frames,
        slow_frames,
        jobs.checksum.load(Ordering::Relaxed),
        if mprof::ENABLED { "on" } else { "off" }
    );
}
