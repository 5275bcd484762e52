// The vendor's facts (its `Capabilities` preset) live in their own target, NIMFacts (adapters/NIM/Facts),
// so the testing kit can link them without the adapter. The adapter re-exports them: its descriptor
// carries the preset, and whoever imports NIM sees `Capabilities` as the adapter does.
@_exported import NIMFacts
