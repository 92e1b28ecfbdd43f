"""Recruitment (docs/providers.md): publishing a study on a crowd provider, its HITs, the
budget and the payment ledger, review, bonuses, blocks and reconciliation. The provider
adapters themselves are the ``providers`` package, below the core, because the core reads
who arrived through them."""
