//! Stopping cleanly. Kubernetes stops a pod with SIGTERM, then SIGKILL once the pod's
//! `terminationGracePeriodSeconds` (30 s by default) have passed; a terminal stops a process
//! with SIGINT (Ctrl-C). Every role of `nac` treats both alike ([`signal`]): a [`Shutdown`] is
//! triggered and each part stops in its own way within the grace period —
//!
//! - the controllers start no new reconcile, let those running finish their writes (each holds
//!   an [`InFlight`] guard, as does the history recorder until it has written what it buffered),
//!   and release the leader Lease so another replica takes over at once
//!   ([`crate::controllers::leader`]);
//! - the gateway stops accepting connections, ends its event streams and GraphQL subscriptions
//!   with a reason telling the client to reconnect, and lets open requests finish
//!   ([`crate::gateway::Gateway::serve`]).
//!
//! Each step is bounded by what is left of the grace period ([`Shutdown::remaining`]); a second
//! signal, or the grace period running out, ends the process at once ([`Shutdown::on_signals`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The default grace period: below Kubernetes' default `terminationGracePeriodSeconds` (30 s),
/// so the process has stopped by itself before the kubelet sends SIGKILL.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(25);

/// The signal that started a shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: how Kubernetes (and `kill`, systemd, container runtimes) stop a process.
    Terminate,
    /// SIGINT: Ctrl-C in a terminal.
    Interrupt,
}

impl Signal {
    /// The signal's name (`SIGTERM`).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Terminate => "SIGTERM",
            Signal::Interrupt => "SIGINT",
        }
    }

    /// The exit status of a process killed by this signal (128 + its number), for a process
    /// that gives up its clean stop on a second signal.
    pub fn exit_code(self) -> i32 {
        match self {
            Signal::Terminate => 143,
            Signal::Interrupt => 130,
        }
    }
}

/// Listens for SIGTERM and SIGINT from the moment it is made (the signals' default action,
/// ending the process at once, no longer applies).
#[derive(Debug)]
pub struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening (inside a Tokio runtime).
    pub fn listen() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// The next SIGTERM or SIGINT.
    pub async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.terminate.recv() => Signal::Terminate,
            _ = self.interrupt.recv() => Signal::Interrupt,
        }
    }
}

/// Waits for the first SIGTERM or SIGINT: the one stop signal of every role.
pub async fn signal() -> std::io::Result<Signal> {
    Ok(Signals::listen()?.next().await)
}

#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// When the shutdown was triggered.
    since: Option<Instant>,
    /// Units of work that must finish before the process stops.
    in_flight: usize,
}

/// A process's stop: triggered once, observed by every part; it also counts the work that must
/// finish first ([`Shutdown::begin`]). Cheap to clone: clones share the state.
#[derive(Clone, Debug)]
pub struct Shutdown {
    state: Arc<watch::Sender<State>>,
    grace: Duration,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new(DEFAULT_GRACE_PERIOD)
    }
}

impl Shutdown {
    /// A shutdown not yet triggered, to be finished within `grace` once it is.
    pub fn new(grace: Duration) -> Self {
        Shutdown {
            state: Arc::new(watch::Sender::new(State::default())),
            grace,
        }
    }

    /// The grace period.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Starts the shutdown; true the first time.
    pub fn trigger(&self) -> bool {
        self.state.send_if_modified(|state| {
            if state.since.is_some() {
                return false;
            }
            state.since = Some(Instant::now());
            true
        })
    }

    /// Whether the shutdown has started.
    pub fn is_triggered(&self) -> bool {
        self.state.borrow().since.is_some()
    }

    /// Resolves once the shutdown has started (at once if it has).
    pub async fn triggered(&self) {
        let mut state = self.state.subscribe();
        // The sender lives as long as `self`: this cannot fail.
        let _ = state.wait_for(|state| state.since.is_some()).await;
    }

    /// What is left of the grace period: all of it before the shutdown starts, then less and
    /// less down to zero.
    pub fn remaining(&self) -> Duration {
        match self.state.borrow().since {
            None => self.grace,
            Some(since) => self.grace.saturating_sub(since.elapsed()),
        }
    }

    /// Registers a unit of work the shutdown waits for (a reconcile's writes, the history
    /// recorder's buffer) until the guard is dropped; `None` once the shutdown has started: no
    /// new work starts then.
    pub fn begin(&self) -> Option<InFlight> {
        let mut admitted = false;
        self.state.send_if_modified(|state| {
            if state.since.is_none() {
                state.in_flight += 1;
                admitted = true;
            }
            admitted
        });
        admitted.then(|| InFlight {
            state: Arc::clone(&self.state),
        })
    }

    /// Units of work in flight now.
    pub fn in_flight(&self) -> usize {
        self.state.borrow().in_flight
    }

    /// Resolves once no work is in flight (at once if none is).
    pub async fn drained(&self) {
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|state| state.in_flight == 0).await;
    }

    /// For binaries: triggers this shutdown at the first SIGTERM or SIGINT (listening starts
    /// now), and ends the process at a second one (exit status 128 + the signal's number) or
    /// when the grace period has passed without the process stopping (exit status 1).
    pub fn on_signals(&self) -> std::io::Result<()> {
        let mut signals = Signals::listen()?;
        let shutdown = self.clone();
        tokio::spawn(async move {
            let first = signals.next().await;
            let grace = shutdown.grace();
            tracing::info!(
                signal = first.name(),
                grace_seconds = grace.as_secs_f64(),
                "stopping"
            );
            shutdown.trigger();
            tokio::select! {
                again = signals.next() => {
                    eprintln!("{}: stopping at once", again.name());
                    std::process::exit(again.exit_code());
                }
                () = tokio::time::sleep(grace) => {
                    eprintln!(
                        "error: not stopped within the grace period ({} s); exiting",
                        grace.as_secs_f64()
                    );
                    std::process::exit(1);
                }
            }
        });
        Ok(())
    }
}

/// A unit of work the shutdown waits for, until dropped ([`Shutdown::begin`]).
#[derive(Debug)]
pub struct InFlight {
    state: Arc<watch::Sender<State>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.send_modify(|state| {
            state.in_flight = state.in_flight.saturating_sub(1);
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_begun_before_the_trigger_is_waited_for_and_none_starts_after() {
        let shutdown = Shutdown::new(Duration::from_secs(10));
        assert!(!shutdown.is_triggered());
        assert_eq!(shutdown.remaining(), Duration::from_secs(10));
        let first = shutdown.begin().unwrap();
        let second = shutdown.begin().unwrap();
        assert_eq!(shutdown.in_flight(), 2);
        assert!(shutdown.trigger());
        assert!(!shutdown.trigger(), "a shutdown starts once");
        shutdown.triggered().await;
        assert!(shutdown.begin().is_none(), "no work starts once stopping");
        drop(first);
        let drained = shutdown.drained();
        tokio::pin!(drained);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut drained)
                .await
                .is_err(),
            "one unit is still in flight"
        );
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), drained)
            .await
            .unwrap();
        assert!(shutdown.remaining() <= Duration::from_secs(10));
    }

    #[tokio::test]
    async fn the_grace_period_runs_from_the_trigger() {
        let shutdown = Shutdown::new(Duration::from_millis(300));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(shutdown.remaining(), Duration::from_millis(300));
        shutdown.trigger();
        let left = shutdown.remaining();
        assert!(left <= Duration::from_millis(300) && left > Duration::from_millis(200));
        tokio::time::sleep(Duration::from_millis(350)).await;
        assert_eq!(shutdown.remaining(), Duration::ZERO);
    }
}
