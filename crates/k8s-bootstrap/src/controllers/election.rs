//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics.
//!
//! * Every write is a PUT (`replace`) that carries the `resourceVersion` of the Lease it was
//!   computed from, so a write based on a stale read fails with 409 Conflict instead of
//!   overwriting another replica's Lease; a missing Lease is created (a concurrent create
//!   fails with 409 AlreadyExists).
//! * A standby takes the Lease over only when its spec has not changed for the Lease's
//!   `leaseDurationSeconds`, measured on the standby's own monotonic clock from when it first
//!   saw that spec, never from the `renewTime` written by another machine's wall clock.
//! * The leader renews every retry period; it counts itself the leader only until
//!   `renew_deadline` after the *start* of its last successful renewal (the server may have
//!   written it at any time after that start, so a standby cannot take over before
//!   `lease_duration` after it). Since `renew_deadline < lease_duration`, the leader stops
//!   before any standby may start, on any machine whose monotonic clock runs at the usual rate.
//! * Every request has a timeout; the leader's are also cut at the renew deadline.
//! * On shutdown the leader releases the Lease (empty `holderIdentity`, again conditional on
//!   the `resourceVersion`), so a standby takes over at once.

use std::hash::{BuildHasher as _, Hasher as _};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

use super::LeaderElection;
use crate::clock;

/// The field manager of every Lease write.
const FIELD_MANAGER: &str = "k8s-bootstrap-controllers";

/// What one acquire-or-renew attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// This replica holds the Lease: the write it just made succeeded.
    Held,
    /// Another replica holds the Lease and it has not expired (as observed here).
    HeldByOther,
    /// A request failed, timed out or lost a race (409): nothing is known; try again.
    Failed,
}

/// One replica's view of the Lease and its writes.
pub(crate) struct Elector {
    api: Api<Lease>,
    config: LeaderElection,
    /// The Lease as last read or written, with its `resourceVersion`.
    observed: Option<Lease>,
    /// When (monotonic) the observed spec was first seen; a standby measures the holder's
    /// lease from here.
    observed_at: Option<Instant>,
    /// The other holder last logged, so a standby says who leads once per change of leader,
    /// not once per retry period.
    reported_holder: Option<String>,
}

/// Whether a Lease held by another replica, whose spec was first seen at `observed_at`, has
/// run out at `now`: `lease_duration` has passed on this machine's monotonic clock.
pub(crate) fn expired(observed_at: Instant, lease_duration: Duration, now: Instant) -> bool {
    observed_at
        .checked_add(lease_duration)
        .is_none_or(|end| now >= end)
}

/// The leader's deadline: `renew_deadline` after the start of its last successful renewal.
pub(crate) fn renew_deadline(renewed_at: Instant, renew_deadline: Duration) -> Instant {
    renewed_at.checked_add(renew_deadline).unwrap_or(renewed_at)
}

/// `leaseDurationSeconds`: whole seconds, rounded up, at least 1.
fn lease_seconds(duration: Duration) -> i32 {
    let secs = duration
        .as_secs()
        .saturating_add(u64::from(duration.subsec_nanos() > 0));
    i32::try_from(secs).unwrap_or(i32::MAX).max(1)
}

fn micro_time_now() -> Option<MicroTime> {
    k8s_openapi::jiff::Timestamp::try_from(clock::now())
        .ok()
        .map(MicroTime)
}

/// The holder named in `spec`, if any (an empty identity is none, as client-go writes it on
/// release).
fn holder(spec: Option<&LeaseSpec>) -> Option<&str> {
    spec.and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// `period` plus up to a fifth more, at random, so that replicas started together do not
/// keep asking at the same instant.
pub(crate) fn jittered(period: Duration) -> Duration {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let fifth = period.checked_div(5).unwrap_or_default();
    let extra = u32::try_from(random % 1024)
        .ok()
        .and_then(|r| fifth.saturating_mul(r).checked_div(1024))
        .unwrap_or_default();
    period.saturating_add(extra)
}

impl Elector {
    pub(crate) fn new(client: kube::Client, config: LeaderElection) -> Elector {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            observed_at: None,
            reported_holder: None,
        }
    }

    /// Whether the Lease as last seen names this replica as its holder.
    fn holds(&self) -> bool {
        holder(self.observed.as_ref().and_then(|l| l.spec.as_ref()))
            == Some(self.config.identity.as_str())
    }

    fn observe(&mut self, lease: Lease) {
        let changed = self.observed.as_ref().map(|l| &l.spec) != Some(&lease.spec);
        if changed || self.observed_at.is_none() {
            self.observed_at = Some(clock::instant());
        }
        self.observed = Some(lease);
    }

    fn params() -> PostParams {
        PostParams {
            dry_run: false,
            field_manager: Some(FIELD_MANAGER.to_owned()),
        }
    }

    /// `request` with the request timeout; `None` when it ran out.
    async fn timed<T>(&self, request: impl Future<Output = Result<T, kube::Error>>) -> Option<T> {
        match tokio::time::timeout(self.config.request_timeout, request).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "leader election: Lease request failed");
                None
            }
            Err(_) => {
                tracing::debug!(
                    timeout = ?self.config.request_timeout,
                    "leader election: Lease request timed out"
                );
                None
            }
        }
    }

    /// PUT `lease` (whose metadata holds the `resourceVersion` it was read with).
    async fn replace(&mut self, lease: Lease) -> bool {
        let api = self.api.clone();
        let name = self.config.lease_name.clone();
        match self
            .timed(async move { api.replace(&name, &Self::params(), &lease).await })
            .await
        {
            Some(written) => {
                self.observe(written);
                true
            }
            None => false,
        }
    }

    /// The spec this replica writes to hold the Lease, from the current one.
    fn holding_spec(&self, current: Option<&LeaseSpec>) -> LeaseSpec {
        let now = micro_time_now();
        let ours = holder(current) == Some(self.config.identity.as_str());
        let transitions = current.and_then(|s| s.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(lease_seconds(self.config.lease_duration)),
            acquire_time: if ours {
                current.and_then(|s| s.acquire_time.clone())
            } else {
                now.clone()
            },
            renew_time: now,
            lease_transitions: Some(if ours || current.is_none() {
                transitions
            } else {
                transitions.saturating_add(1)
            }),
            ..LeaseSpec::default()
        }
    }

    /// One attempt to acquire or renew the Lease, as client-go's `tryAcquireOrRenew`: the
    /// holder first renews from the Lease it last wrote (one PUT); otherwise, or when that
    /// fails, it reads the Lease, creates it when missing, leaves it alone while another
    /// holder's lease runs, and else writes itself in with the `resourceVersion` it read.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Attempt {
        if self.holds()
            && let Some(mut lease) = self.observed.clone()
        {
            lease.spec = Some(self.holding_spec(lease.spec.as_ref()));
            if self.replace(lease).await {
                return Attempt::Held;
            }
        }
        let api = self.api.clone();
        let name = self.config.lease_name.clone();
        let Some(current) = self.timed(async move { api.get_opt(&name).await }).await else {
            return Attempt::Failed;
        };
        let Some(current) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.lease_name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.holding_spec(None)),
            };
            let api = self.api.clone();
            return match self
                .timed(async move { api.create(&Self::params(), &lease).await })
                .await
            {
                Some(created) => {
                    self.observe(created);
                    Attempt::Held
                }
                None => Attempt::Failed,
            };
        };
        self.observe(current.clone());
        let spec = current.spec.as_ref();
        if let Some(other) = holder(spec)
            && other != self.config.identity
        {
            let duration = spec
                .and_then(|s| s.lease_duration_seconds)
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.config.lease_duration, Duration::from_secs);
            let observed_at = self.observed_at.unwrap_or_else(clock::instant);
            if !expired(observed_at, duration, clock::instant()) {
                if self.reported_holder.as_deref() != Some(other) {
                    tracing::info!(
                        holder = other,
                        "leader election: another replica holds the lease"
                    );
                    self.reported_holder = Some(other.to_owned());
                }
                return Attempt::HeldByOther;
            }
            tracing::info!(
                holder = other,
                "leader election: the holder's lease ran out, taking it over"
            );
        }
        let spec = self.holding_spec(spec);
        let mut lease = current;
        lease.spec = Some(spec);
        if self.replace(lease).await {
            Attempt::Held
        } else {
            Attempt::Failed
        }
    }

    /// Tries every retry period (with jitter) until this replica holds the Lease; returns the
    /// monotonic time at which the successful attempt started.
    pub(crate) async fn acquire(&mut self) -> Instant {
        loop {
            let start = clock::instant();
            if self.try_acquire_or_renew().await == Attempt::Held {
                return start;
            }
            tokio::time::sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews every retry period; returns when leadership is lost: another replica holds the
    /// Lease, or no renewal succeeded within the renew deadline of the start of the last
    /// successful one (`renewed_at` is that of the acquisition at first).
    pub(crate) async fn keep(&mut self, mut renewed_at: Instant) {
        loop {
            let deadline = renew_deadline(renewed_at, self.config.renew_deadline);
            let next = clock::instant()
                .checked_add(self.config.retry_period)
                .map_or(deadline, |n| n.min(deadline));
            tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
            let start = clock::instant();
            let Some(left) = deadline
                .checked_duration_since(start)
                .filter(|l| !l.is_zero())
            else {
                tracing::error!(
                    renew_deadline = ?self.config.renew_deadline,
                    "leader election: the Lease was not renewed within the renew deadline"
                );
                return;
            };
            match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                Ok(Attempt::Held) => renewed_at = start,
                Ok(Attempt::HeldByOther) => {
                    tracing::error!("leader election: another replica holds the Lease");
                    return;
                }
                Ok(Attempt::Failed) | Err(_) => {
                    tracing::warn!("leader election: renewing the Lease failed, retrying");
                }
            }
        }
    }

    /// Releases the Lease if this replica holds it: an empty holder and a one-second duration,
    /// written with the `resourceVersion` last seen (after a 409, read once more and released
    /// only if the Lease still names this replica). Returns whether it was released.
    pub(crate) async fn release(&mut self) -> bool {
        for _ in 0..2 {
            if !self.holds() {
                return false;
            }
            let Some(mut lease) = self.observed.clone() else {
                return false;
            };
            let now = micro_time_now();
            lease.spec = Some(LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: now.clone(),
                renew_time: now,
                lease_transitions: lease.spec.as_ref().and_then(|s| s.lease_transitions),
                ..LeaseSpec::default()
            });
            if self.replace(lease).await {
                return true;
            }
            let api = self.api.clone();
            let name = self.config.lease_name.clone();
            match self.timed(async move { api.get_opt(&name).await }).await {
                Some(Some(current)) => self.observe(current),
                _ => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::arithmetic_side_effects, reason = "tests")]

    use super::*;

    #[test]
    fn a_standby_measures_the_lease_on_its_own_clock_from_when_it_saw_it() {
        let seen = clock::instant();
        let d = Duration::from_secs(15);
        assert!(!expired(seen, d, seen));
        assert!(!expired(seen, d, seen + Duration::from_millis(14_999)));
        assert!(expired(seen, d, seen + d));
    }

    #[test]
    fn the_leader_stops_at_the_renew_deadline_from_the_start_of_its_last_renewal() {
        let start = clock::instant();
        let deadline = renew_deadline(start, Duration::from_secs(10));
        assert_eq!(deadline - start, Duration::from_secs(10));
        // The leader's deadline comes before any standby's takeover, whatever the
        // standby saw: it cannot have seen the renewal before the request started.
        assert!(!expired(start, Duration::from_secs(15), deadline));
    }

    #[test]
    fn lease_seconds_round_up_and_stay_in_range() {
        assert_eq!(lease_seconds(Duration::from_secs(15)), 15);
        assert_eq!(lease_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(lease_seconds(Duration::ZERO), 1);
        assert_eq!(lease_seconds(Duration::MAX), i32::MAX);
    }

    #[test]
    fn jitter_adds_at_most_a_fifth() {
        for _ in 0..100 {
            let j = jittered(Duration::from_secs(2));
            assert!(
                j >= Duration::from_secs(2) && j <= Duration::from_millis(2400),
                "{j:?}"
            );
        }
    }

    #[test]
    fn an_empty_holder_is_no_holder() {
        let spec = LeaseSpec {
            holder_identity: Some(String::new()),
            ..LeaseSpec::default()
        };
        assert_eq!(holder(Some(&spec)), None);
        assert_eq!(holder(None), None);
    }
}
