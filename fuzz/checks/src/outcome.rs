//! What a check made of one input.

/// Whether the entry point under test accepted an input (what "accepted" means is documented
/// on each check). A check that returns has found no property violated either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(
    clippy::exhaustive_enums,
    reason = "accepted or not: complete by definition"
)]
pub enum Outcome {
    /// The entry point accepted the input, and every property of an accepted input held.
    Accepted,
    /// The entry point rejected the input (or the input did not decode), without panicking.
    Rejected,
}

impl Outcome {
    /// [`Outcome::Accepted`] if `accepted`, else [`Outcome::Rejected`].
    pub(crate) fn accepted_if(accepted: bool) -> Outcome {
        if accepted {
            Outcome::Accepted
        } else {
            Outcome::Rejected
        }
    }
}
