import IMStore
import Testing
@testable import IMRelay

/// The engine's own view of its leases (docs/high-availability.md, "Fenced deliveries"), on a clock the
/// test moves by hand.
@Suite struct HeldLeasesTests {
    let fence = LeaseFence(name: "lane:rc/group:g", owner: "A", token: 7)

    @Test func aCallMayStartOnlyWellInsideTheLease() {
        let leases = HeldLeases(ttlMs: 3_000)   // margin: 750 ms
        let t0 = ContinuousClock.now
        #expect(!leases.mayWrite(fence, now: t0), "never taken")
        leases.took(fence, askedAt: t0)
        #expect(leases.mayWrite(fence, now: t0 + .milliseconds(2_200)))
        #expect(!leases.mayWrite(fence, now: t0 + .milliseconds(2_300)), "within the margin of the expiry")
        #expect(!leases.mayWrite(LeaseFence(name: fence.name, owner: "A", token: 8), now: t0), "another tenure")
        leases.renewed([fence], askedAt: t0 + .milliseconds(2_000))
        #expect(leases.mayWrite(fence, now: t0 + .milliseconds(4_000)), "renewed: counted from when the renewal was sent")
        #expect(!leases.mayWrite(fence, now: t0 + .seconds(10)), "a pause past the lease: no call")
    }

    @Test func aRenewalThatMissesALeaseForgetsIt() {
        let leases = HeldLeases(ttlMs: 8_000)
        let t0 = ContinuousClock.now
        let other = LeaseFence(name: "lane:rc/group:h", owner: "A", token: 9)
        leases.took(fence, askedAt: t0, now: t0 + .milliseconds(50))
        leases.took(other, askedAt: t0 + .milliseconds(500), now: t0 + .milliseconds(550))
        // A renewal sent at t0 + 100 ms: `other` was taken after it was sent, so its absence says nothing.
        leases.renewed([], askedAt: t0 + .milliseconds(100))
        #expect(!leases.mayWrite(fence, now: t0 + .milliseconds(200)), "taken over: forgotten at once")
        #expect(leases.mayWrite(other, now: t0 + .milliseconds(600)))
        #expect(leases.count == 1)
        leases.released(other.name)
        #expect(leases.count == 0)
    }

    /// A lane's claim asked for before a renewal but committed after the renewal ran (it queued behind the
    /// relay's writes, the renewal has a session of its own): the renewal's answer lacks it, and it is not lost.
    @Test func aClaimThatCommittedDuringARenewalIsKept() {
        let leases = HeldLeases(ttlMs: 8_000)
        let t0 = ContinuousClock.now
        // Claim sent at t0, renewal sent at t0 + 10 ms and run at once; the claim commits at t0 + 300 ms,
        // and the renewal's answer (without the lane) is handled after that.
        leases.took(fence, askedAt: t0, now: t0 + .milliseconds(300))
        leases.renewed([], askedAt: t0 + .milliseconds(10))
        #expect(leases.mayWrite(fence, now: t0 + .milliseconds(400)), "not taken over: the renewal ran before the claim committed")
        leases.renewed([], askedAt: t0 + .milliseconds(500))
        #expect(!leases.mayWrite(fence, now: t0 + .milliseconds(600)), "a renewal sent after the commit that lacks it: taken over")
    }
}
