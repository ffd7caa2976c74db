//! A progress indicator on stderr while a future runs: a spinner redrawn every second on a
//! terminal; otherwise a plain line every ten seconds for the first minute, then every minute
//! (a wait of an hour writes some seventy lines, not three hundred and sixty).

use std::future::Future;
use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// Runs `work` to completion, reporting `what` on stderr until it finishes, each progress line
/// ending with what `status` says then (why the last attempt failed, say).
pub(crate) async fn report_with<F: Future>(
    what: &str,
    status: impl Fn() -> Option<String>,
    work: F,
) -> F::Output {
    let tty = std::io::stderr().is_terminal();
    let period = Duration::from_secs(if tty { 1 } else { 10 });
    eprintln!("{what}");
    let mut ticker = tokio::time::interval(period);
    // The first tick completes at once.
    ticker.tick().await;
    let mut ticks: u64 = 0;
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => {
                if tty {
                    eprint!("\r\x1b[K");
                    let _ = std::io::stderr().flush();
                }
                return out;
            }
            _ = ticker.tick() => {
                ticks = ticks.saturating_add(1);
                let seconds = ticks.saturating_mul(period.as_secs());
                let why = status().map(|s| format!(": {s}")).unwrap_or_default();
                if tty {
                    let frame = usize::try_from(ticks % 4).ok().and_then(|i| FRAMES.get(i)).copied().unwrap_or('|');
                    // The line is redrawn: clear what a longer one left.
                    eprint!("\r\x1b[K{frame} still waiting ({seconds}s){why}");
                    let _ = std::io::stderr().flush();
                } else if seconds <= 60 || seconds.is_multiple_of(60) {
                    eprintln!("still waiting ({seconds}s){why}");
                }
            }
        }
    }
}

/// Writes `line` on stderr at once, between the progress lines of [`report_with`] (on a
/// terminal, over the spinner, which the next tick draws again below it).
pub(crate) fn note(line: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[K");
    }
    eprintln!("{line}");
}
