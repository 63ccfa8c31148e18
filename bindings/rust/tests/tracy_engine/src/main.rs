//! A frame loop instrumented with the tracy-client crate's API (spans, frame marks, a secondary
//! frame set, a discontinuous frame, plots, messages, thread names, a profiled allocator) and
//! nothing else. Built with `--features tracy` against mprof's crate renamed to `tracy-client`,
//! it records an mprof capture; it prints what it did as `key=count` lines for the test.
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "tracy")]
#[global_allocator]
static GLOBAL: tracy_client::ProfiledAllocator<std::alloc::System> =
    tracy_client::ProfiledAllocator::new(std::alloc::System, 0);

static JOBS: AtomicU64 = AtomicU64::new(0);
static WORK: AtomicU64 = AtomicU64::new(0);

fn physics(step: u64) -> u64 {
    #[cfg(feature = "tracy")]
    let _span = tracy_client::span!("Physics::step");
    (0..200 + step % 7).fold(step, |a, b| a.wrapping_mul(31).wrapping_add(b))
}

fn ai() -> u64 {
    #[cfg(feature = "tracy")]
    let span = tracy_client::span!();
    #[cfg(feature = "tracy")]
    span.emit_value(3);
    (0..150u64).sum()
}

fn render(frame: u64) -> Vec<u8> {
    #[cfg(feature = "tracy")]
    let span = tracy_client::Client::running()
        .expect("client")
        .span_alloc(Some("Render::draw"), "render", file!(), line!(), 0);
    #[cfg(feature = "tracy")]
    span.emit_text("opaque");
    vec![(frame % 251) as u8; 4096]
}

fn worker(id: u64) {
    #[cfg(feature = "tracy")]
    tracy_client::set_thread_name!(format!("worker {}", id).as_str());
    for _ in 0..50 {
        #[cfg(feature = "tracy")]
        let _span = tracy_client::span!("Job");
        JOBS.fetch_add(1, Ordering::Relaxed);
        WORK.fetch_add((0..300u64).sum::<u64>(), Ordering::Relaxed);
    }
}

/// What the migration guide says does not map: each fails to compile with mprof's reason.
#[cfg(all(feature = "tracy", feature = "callstack"))]
fn deep() {
    let _s = tracy_client::span!("Deep", 8);
}

#[cfg(all(feature = "tracy", feature = "color"))]
fn colored() {
    let s = tracy_client::span!("Colored");
    s.emit_color(0xff0000);
}

fn main() {
    #[cfg(feature = "tracy")]
    let client = tracy_client::Client::start();
    #[cfg(feature = "tracy")]
    client.set_thread_name("main");
    let frames = 60u64;
    let mut sink = 0u64;
    let workers: Vec<_> = (0..2).map(|i| std::thread::spawn(move || worker(i))).collect();
    #[cfg(feature = "tracy")]
    client.plot_config(
        tracy_client::plot_name!("bytes"),
        tracy_client::PlotConfiguration::default().format(tracy_client::PlotFormat::Memory),
    );
    for f in 0..frames {
        #[cfg(feature = "tracy")]
        let _frame = tracy_client::span!("Frame");
        sink = sink.wrapping_add(physics(f));
        sink = sink.wrapping_add(ai());
        let pixels = render(f);
        sink = sink.wrapping_add(pixels.len() as u64);
        if f % 3 == 0 {
            #[cfg(feature = "tracy")]
            tracy_client::secondary_frame_mark!("Physics tick");
        }
        if f == 20 {
            #[cfg(feature = "tracy")]
            let _load = tracy_client::non_continuous_frame!("Load");
            #[cfg(feature = "tracy")]
            let _s = tracy_client::span!("Load::level");
        }
        #[cfg(feature = "tracy")]
        {
            tracy_client::plot!("entities", (100 + f) as f64);
            client.plot(tracy_client::plot_name!("bytes"), pixels.len() as f64);
            if f % 20 == 0 {
                client.message("checkpoint", 0);
                client.color_message("warm", 0xffaa00, 0);
            }
        }
        #[cfg(feature = "tracy")]
        tracy_client::frame_mark();
    }
    for w in workers {
        w.join().unwrap();
    }
    println!("frames={}", frames);
    println!("physics_ticks={}", (0..frames).filter(|f| f % 3 == 0).count());
    println!("jobs={}", JOBS.load(Ordering::Relaxed));
    println!("messages={}", 2 * ((frames + 19) / 20));
    println!("sink={}", sink);
}
