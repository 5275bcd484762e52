// The vendor's facts (its `Capabilities` preset) live in their own target, JMessageFacts (adapters/JMessage/Facts),
// so the testing kit can link them without the adapter. The adapter re-exports them: its descriptor
// carries the preset, and whoever imports JMessage sees `Capabilities` as the adapter does.
@_exported import JMessageFacts
