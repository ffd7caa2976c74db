//! The YAML parser's budget for every document this crate reads (feature `yaml`).

/// serde-saphyr options: depth 64, 200,000 nodes, 64 aliases and anchors, at most
/// `max_documents` documents, duplicate keys refused, no snippet of the input in errors.
pub(crate) fn options(max_documents: usize) -> serde_saphyr::Options {
    let limit = crate::rbac::MAX_RBAC_DOCUMENT_BYTES;
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(limit),
            max_depth: 64,
            max_nodes: 200_000,
            max_events: 800_000,
            max_aliases: 64,
            max_anchors: 64,
            max_documents: max_documents,
            max_total_scalar_bytes: limit,
            max_merge_keys: 16,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 200_000,
            max_replay_stack_depth: 8,
        },
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        with_snippet: false,
    }
}

/// The line and column of a YAML error, 1-based (0 when unknown).
pub(crate) fn location(e: &serde_saphyr::Error) -> (usize, usize) {
    e.location().map_or((0, 0), |l| {
        (
            usize::try_from(l.line()).unwrap_or(usize::MAX),
            usize::try_from(l.column()).unwrap_or(usize::MAX),
        )
    })
}
