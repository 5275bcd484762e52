import IMCore

extension ConformanceChecks {
    static let expansion: [ConformanceCheck] = [
        ConformanceCheck(name: "expansion.lifecycle") { ctx in
            guard let backend = try ctx.feature(.expansion, as: (any ExpansionUpdating).self) else { return }
            guard ctx.capabilities.support(.expansion).isNative else {
                try await ctx.expectError(.unsupported, "expansion") {
                    _ = try await ctx.send(.text("x"), expansion: ["k": "v"])
                }
                return
            }
            let sent = try await ctx.send(.text("order 42"), expansion: ["status": "pending", "owner": "alice"])
            let stream = ctx.backend.events()
            let delta = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.bob,
                                                          .set(["status": "paid", "owner": "alice", "paid_at": "1700000000"]))
            try ctx.expect(delta.set == ["status": "paid", "paid_at": "1700000000"], "delta set is \(delta.set), expected only the changed keys")
            let event = try await ctx.waitFor("expansionChanged", on: stream) {
                if case .expansionChanged(let id, _, _, _) = $0.kind { id == sent.id } else { false }
            }
            if case .expansionChanged(_, _, _, let eventDelta) = event.kind {
                try ctx.expect(eventDelta.set == ["status": "paid", "paid_at": "1700000000"] && eventDelta.removed.isEmpty,
                               "event carries \(eventDelta), expected only status and paid_at")
            }
            let removal = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.bob, .remove(["owner"]))
            try ctx.expect(removal.removed == ["owner"], "removal delta is \(removal)")
            let now = try await backend.expansion(of: sent.id, in: ctx.direct)
            try ctx.expect(now.values == ["status": "paid", "paid_at": "1700000000"], "expansion is \(now.values)")
        },
        ConformanceCheck(name: "expansion.not-enabled-refused") { ctx in
            guard ctx.capabilities.support(.expansion).isNative, let backend = ctx.backend as? any ExpansionUpdating else {
                throw ctx.skip("expansion is not native")
            }
            let sent = try await ctx.send(.text("plain"))
            try await ctx.expectError(.expansionNotEnabled, "expanding a message sent without expansion") {
                _ = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.alice, .set(["k": "v"]))
            }
        },
        ConformanceCheck(name: "expansion.limits-refused-whole") { ctx in
            guard ctx.capabilities.support(.expansion).isNative, let backend = ctx.backend as? any ExpansionUpdating,
                  let limits = ctx.capabilities.expansionLimits else { throw ctx.skip("expansion is not native") }
            let sent = try await ctx.send(.text("limited"), expansion: [:])
            let longKey = String(repeating: "k", count: limits.maxKeyLength + 1)
            var error = try await ctx.expectError(.expansionLimitExceeded, "a key over \(limits.maxKeyLength) characters") {
                _ = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.alice, .set(["ok": "1", longKey: "v"]))
            }
            try ctx.expect(error.details["limit"] == "key_length" && error.details["key"] == longKey, "error details \(error.details)")
            error = try await ctx.expectError(.expansionLimitExceeded, "a value over \(limits.maxValueLength) characters") {
                _ = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.alice,
                                                      .set(["big": String(repeating: "v", count: limits.maxValueLength + 1)]))
            }
            try ctx.expect(error.details["limit"] == "value_length" && error.details["key"] == "big", "error details \(error.details)")
            let perChange = limits.maxKeysPerChange(for: ctx.capabilities.expansionCaller)
            let many = Dictionary(uniqueKeysWithValues: (0...perChange).map { ("k\($0)", "v") })
            error = try await ctx.expectError(.expansionLimitExceeded, "\(perChange + 1) keys in one change") {
                _ = try await backend.updateExpansion(of: sent.id, in: ctx.direct, by: ctx.alice, .set(many))
            }
            try ctx.expect(error.details["limit"] == "keys_per_change", "error details \(error.details)")
            let after = try await backend.expansion(of: sent.id, in: ctx.direct)
            try ctx.expect(after.values.isEmpty, "a refused change left \(after.values) behind")
        },
    ]
}
