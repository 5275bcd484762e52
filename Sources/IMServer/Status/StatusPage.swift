import Foundation
import Mustache

/// The status page (`GET /` of `admin_listen`, `GET /status` on any listener that serves the operator's
/// endpoints): `StatusReport` rendered as HTML by a Mustache template compiled into the binary
/// (`StatusPage.template`, a string literal: nothing is read from disk at run time). The page works
/// without JavaScript and reloads itself with `<meta http-equiv="refresh">`.
///
/// Everything that comes from outside — conversation ids, dead-letter reasons, keys, event ids — goes
/// through `{{ }}`, which HTML-escapes (`<`, `>`, `&`, `"`, `'`); the template has no `{{{ }}}`.
public enum StatusPage {
    /// Renders `report` (`refreshSeconds`: the reload interval written into the page).
    /// The page may load nothing and run nothing; its one form (the trace search box) submits to this listener.
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    public static func html(_ report: StatusReport, refreshSeconds: Int) -> String {
        compiled.render(View(report, refreshSeconds: refreshSeconds))
    }

    static let compiled: MustacheTemplate = {
        do {
            return try MustacheTemplate(string: template)
        } catch {
            // The template is a constant of this file; a test renders it, so a broken one fails there.
            preconditionFailure("status page template does not parse: \(error)")
        }
    }()

    // MARK: view model (preformatted strings: the template has no logic)

    struct View {
        var refreshSeconds: Int
        var generatedAt: String
        var version: String
        var commit: String
        var instance: String
        var leader: Bool
        var uptime: String
        var store: StatusReport.Store
        var storeDown: Bool
        var backends: [BackendRow]
        var routes: [RouteRow]
        var lanes: [LaneRow]
        var lanesTotal: Int
        var lanesCut: Bool
        var lanesShown: Int
        var outbound: [OutboundRow]
        var outboundTotal: Int
        var inbound: [InboundRow]
        var inboundTotal: Int
        var deadLettersShown: Int
        var minutes: [MinuteRow]
        var windowMinutes: Int
        var windowEventsIn: Int
        var windowRelayed: Int
        var windowFailed: Int
        var audit: AuditView

        init(_ report: StatusReport, refreshSeconds: Int) {
            let now = report.generatedAtMs
            self.refreshSeconds = max(1, refreshSeconds)
            generatedAt = StatusPage.time(report.generatedAtMs)
            version = report.build.version
            commit = report.build.commit
            instance = report.instance
            leader = report.leader
            uptime = StatusPage.duration(now - report.startedAtMs)
            store = report.store
            storeDown = !report.store.up
            backends = report.backends.map { BackendRow($0, now: now) }
            routes = report.routes.map { RouteRow(from: $0.from, to: $0.to, arrow: $0.direction == "both" ? "⇄" : "→", media: $0.media) }
            lanes = report.lanes.top.map {
                LaneRow(target: $0.target, conversation: $0.conversation, depth: $0.depth, oldestAge: StatusPage.duration($0.oldestAgeMs))
            }
            lanesTotal = report.lanes.total
            lanesCut = report.lanes.total > report.lanes.top.count
            lanesShown = report.lanes.top.count
            outbound = report.deadLetters.outbound.map {
                OutboundRow(id: $0.id, target: $0.target, conversation: $0.conversation, kind: $0.kind, source: "\($0.sourceBackend) \($0.sourceEventId)",
                            attempts: $0.attempts, reason: $0.reason, age: StatusPage.duration(now - $0.createdAtMs))
            }
            outboundTotal = report.deadLetters.outboundTotal
            inbound = report.deadLetters.inbound.map {
                InboundRow(id: $0.id, backend: $0.backend, key: $0.key, format: $0.format, reason: $0.reason, retries: $0.retries,
                           age: StatusPage.duration(now - $0.receivedAtMs))
            }
            inboundTotal = report.deadLetters.inboundTotal
            deadLettersShown = report.deadLetters.shownLimit
            let peak = max(1, report.activity.minutes.map { max($0.relayed, $0.retries + $0.deadLetters, $0.eventsIn) }.max() ?? 1)
            minutes = report.activity.minutes.reversed().map { minute in
                let failed = minute.retries + minute.deadLetters
                return MinuteRow(time: StatusPage.clock(minute.startMs), eventsIn: minute.eventsIn, relayed: minute.relayed, retries: minute.retries,
                                 deadLetters: minute.deadLetters, inboundDeadLetters: minute.inboundDeadLetters, refused: minute.refused,
                                 relayedWidth: minute.relayed * 100 / peak, failedWidth: failed * 100 / peak)
            }
            windowMinutes = report.activity.minutes.count
            windowEventsIn = report.activity.minutes.reduce(0) { $0 + $1.eventsIn }
            windowRelayed = report.activity.minutes.reduce(0) { $0 + $1.relayed }
            windowFailed = report.activity.minutes.reduce(0) { $0 + $1.retries + $1.deadLetters }
            audit = AuditView(report.audit, now: now)
        }
    }

    /// The last scheduled audit (`verify:`).
    struct AuditView {
        var enabled: Bool
        var ran: Bool
        var ranAgo = "", window = "", duration = ""
        var conversations = 0, sourceMessages = 0, unreadable = 0, total = 0, readCalls = 0
        var counts: [KindCount] = []
        var items: [AuditItemRow] = []

        init(_ audit: StatusReport.Audit, now: Int64) {
            enabled = audit.enabled
            ran = audit.last != nil
            guard let last = audit.last else { return }
            ranAgo = StatusPage.duration(now - last.ranAtMs)
            window = StatusPage.duration(last.windowMs)
            duration = StatusPage.duration(last.durationMs)
            conversations = last.conversations
            sourceMessages = last.sourceMessages
            unreadable = last.unreadable
            readCalls = last.readCalls
            counts = last.drift.sorted { $0.key < $1.key }.map { KindCount(kind: $0.key, count: $0.value) }
            total = last.drift.values.reduce(0, +)
            items = last.items.map {
                AuditItemRow(kind: $0.kind, conversation: "\($0.source) → \($0.target)", sourceMessage: $0.sourceMessage,
                             targetMessage: $0.targetMessage ?? "—", detail: $0.detail)
            }
        }
    }

    struct KindCount { var kind: String; var count: Int }
    struct AuditItemRow { var kind, conversation, sourceMessage, targetMessage, detail: String }

    struct BackendRow {
        var name: String
        var adapter: String
        var endpoints: String
        var state: String
        var lastErrorClass: String
        var lastSuccess: String
        var failingFor: String
        var pending: Int
        var oldestPending: String

        init(_ backend: StatusReport.Backend, now: Int64) {
            name = backend.name
            adapter = backend.adapter ?? "—"
            endpoints = backend.endpoints.isEmpty ? "—" : backend.endpoints.joined(separator: " ")
            state = backend.down ? "down" : backend.state
            lastErrorClass = backend.lastErrorClass ?? "—"
            // A call that succeeded, or a sign of life the backend gave (a callback, a poll it answered).
            let heardLater = (backend.lastHeardMs ?? .min) > (backend.lastSuccessMs ?? .min)
            let latest = heardLater ? backend.lastHeardMs : backend.lastSuccessMs
            lastSuccess = latest.map { StatusPage.duration(now - $0) + " ago" + (heardLater ? " (heard from it)" : "") } ?? "never"
            failingFor = backend.failingSinceMs.map { StatusPage.duration(now - $0) } ?? "—"
            pending = backend.pending
            oldestPending = backend.oldestPendingAgeMs.map(StatusPage.duration) ?? "—"
        }
    }

    struct RouteRow { var from, to, arrow, media: String }
    struct LaneRow { var target, conversation: String; var depth: Int; var oldestAge: String }
    struct OutboundRow { var id: Int64; var target, conversation, kind, source: String; var attempts: Int; var reason, age: String }
    struct InboundRow { var id: Int64; var backend, key, format, reason: String; var retries: Int; var age: String }
    struct MinuteRow {
        var time: String
        var eventsIn, relayed, retries, deadLetters, inboundDeadLetters, refused: Int
        var relayedWidth, failedWidth: Int
    }

    // MARK: formatting

    /// `4 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`.
    static func duration(_ ms: Int64) -> String {
        let seconds = max(0, ms) / 1000
        switch seconds {
        case ..<60: return "\(seconds) s"
        case ..<3600: return "\(seconds / 60) min \(seconds % 60) s"
        case ..<86400: return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
        default: return "\(seconds / 86400) d \(seconds % 86400 / 3600) h"
        }
    }

    static func time(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// `HH:MM` (UTC) of a minute's start.
    static func clock(_ ms: Int64) -> String {
        let minutes = (ms / 60_000) % 1440
        return String(format: "%02d:%02d", Int(minutes / 60), Int(minutes % 60))
    }

    // MARK: the template

    static let template = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{refreshSeconds}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>IMBridge status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d2330; background: #fafbfc; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
h2 { font-size: 1.1em; margin: 1.6em 0 .4em; border-bottom: 1px solid #d8dde5; padding-bottom: .2em; }
.meta { color: #5a6475; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e6e9ef; vertical-align: top; }
th { background: #f0f2f6; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, monospace; font-size: .92em; }
.state { font-weight: 600; padding: .05em .5em; border-radius: .8em; }
.state-ok { background: #d9f2df; color: #17602a; }
.state-degraded { background: #fff0c2; color: #7a5400; }
.state-down { background: #fbd5d5; color: #8e1616; }
.state-unknown { background: #e6e9ef; color: #5a6475; }
.reason { font-family: ui-monospace, monospace; font-size: .9em; white-space: pre-wrap; word-break: break-word; color: #8e1616; }
.bar { display: inline-block; height: .7em; vertical-align: middle; }
.bar-relayed { background: #3b9b57; }
.bar-failed { background: #d2533f; }
.empty { color: #5a6475; font-style: italic; }
.warn { background: #fbd5d5; padding: .5em; }
</style>
</head>
<body>
<h1>IMBridge status</h1>
<p class="meta">version <code id="version">{{version}}</code> (commit <code>{{commit}}</code>) · instance <code>{{instance}}</code>{{#leader}} · leader{{/leader}} · up {{uptime}} · generated {{generatedAt}} · reloads every {{refreshSeconds}} s · <a href="status.json">status.json</a></p>
<form method="get" action="trace" id="trace-search"><label>Where is my message? <input type="search" name="id" placeholder="source or target message id"></label><input type="hidden" name="format" value="html"> <button type="submit">trace</button></form>
{{#storeDown}}<p class="warn" id="store-down">The store did not answer: outbox and dead letters are not shown.</p>{{/storeDown}}
{{#store}}<p class="meta">store: {{kind}} <code>{{location}}</code> · pending entries {{pending}} in {{lanesWithWork}} lane(s) · dead letters {{deadLetters}} outbound, {{inboundDeadLetters}} inbound</p>{{/store}}

<h2>Backends</h2>
<table id="backends">
<tr><th>backend</th><th>adapter</th><th>state</th><th>last error class</th><th>last success</th><th>failing for</th><th class="num">pending</th><th>oldest pending</th><th>endpoints</th></tr>
{{#backends}}
<tr class="backend" data-backend="{{name}}" data-state="{{state}}"><td><code>{{name}}</code></td><td>{{adapter}}</td><td><span class="state state-{{state}}">{{state}}</span></td><td><code>{{lastErrorClass}}</code></td><td>{{lastSuccess}}</td><td>{{failingFor}}</td><td class="num">{{pending}}</td><td>{{oldestPending}}</td><td class="mono">{{endpoints}}</td></tr>
{{/backends}}
</table>

<h2>Routes</h2>
<table id="routes">
<tr><th>from</th><th></th><th>to</th><th>media</th></tr>
{{#routes}}
<tr><td><code>{{from}}</code></td><td>{{arrow}}</td><td><code>{{to}}</code></td><td>{{media}}</td></tr>
{{/routes}}
{{^routes}}<tr><td colspan="4" class="empty">no routes</td></tr>{{/routes}}
</table>

<h2>Lanes with pending work</h2>
<p class="meta">{{lanesTotal}} lane(s) with pending entries{{#lanesCut}}; the {{lanesShown}} whose oldest entry is oldest are shown{{/lanesCut}}.</p>
<table id="lanes">
<tr><th>target</th><th>conversation</th><th class="num">depth</th><th>oldest entry</th></tr>
{{#lanes}}
<tr class="lane"><td><code>{{target}}</code></td><td><code>{{conversation}}</code></td><td class="num">{{depth}}</td><td>{{oldestAge}}</td></tr>
{{/lanes}}
{{^lanes}}<tr><td colspan="4" class="empty">no pending work</td></tr>{{/lanes}}
</table>

<h2>Recent dead letters</h2>
<p class="meta">Outbound: {{outboundTotal}} in the store (newest {{deadLettersShown}} at most shown). <code>imbridge deadletters list</code> / <code>retry</code> act on them.</p>
<table id="dead-letters-outbound">
<tr><th class="num">id</th><th>target</th><th>conversation</th><th>kind</th><th>source event</th><th class="num">attempts</th><th>queued</th><th>reason</th></tr>
{{#outbound}}
<tr class="dead-letter"><td class="num">{{id}}</td><td><code>{{target}}</code></td><td><code>{{conversation}}</code></td><td>{{kind}}</td><td class="mono">{{source}}</td><td class="num">{{attempts}}</td><td>{{age}} ago</td><td class="reason">{{reason}}</td></tr>
{{/outbound}}
{{^outbound}}<tr><td colspan="8" class="empty">none</td></tr>{{/outbound}}
</table>
<p class="meta">Inbound (messages received but not convertible): {{inboundTotal}} in the store.</p>
<table id="dead-letters-inbound">
<tr><th class="num">id</th><th>backend</th><th>key</th><th>format</th><th class="num">retries</th><th>received</th><th>reason</th></tr>
{{#inbound}}
<tr class="dead-letter"><td class="num">in#{{id}}</td><td><code>{{backend}}</code></td><td class="mono">{{key}}</td><td>{{format}}</td><td class="num">{{retries}}</td><td>{{age}} ago</td><td class="reason">{{reason}}</td></tr>
{{/inbound}}
{{^inbound}}<tr><td colspan="7" class="empty">none</td></tr>{{/inbound}}
</table>

{{#audit}}
<h2>Last audit</h2>
{{^enabled}}<p class="meta" id="audit-off">Scheduled audits are off (<code>verify: interval</code>); <code>imbridge verify</code> compares both sides on demand.</p>{{/enabled}}
{{#enabled}}{{^ran}}<p class="meta" id="audit-pending">No audit has finished yet.</p>{{/ran}}{{/enabled}}
{{#ran}}
<p class="meta" id="audit-summary">{{ranAgo}} ago over the last {{window}}: {{conversations}} conversation(s), {{sourceMessages}} source message(s), {{total}} drift item(s), {{unreadable}} unreadable; {{readCalls}} history call(s) in {{duration}}.</p>
<table id="audit-counts">
<tr>{{#counts}}<th class="num">{{kind}}</th>{{/counts}}</tr>
<tr>{{#counts}}<td class="num drift-{{kind}}">{{count}}</td>{{/counts}}</tr>
</table>
<table id="audit-items">
<tr><th>kind</th><th>conversation</th><th>source message</th><th>target message</th><th>detail</th></tr>
{{#items}}
<tr class="drift"><td>{{kind}}</td><td><code>{{conversation}}</code></td><td class="mono">{{sourceMessage}}</td><td class="mono">{{targetMessage}}</td><td class="reason">{{detail}}</td></tr>
{{/items}}
{{^items}}<tr><td colspan="5" class="empty">no drift</td></tr>{{/items}}
</table>
{{/ran}}
{{/audit}}

<h2>Last {{windowMinutes}} minutes</h2>
<p class="meta">In this window: {{windowEventsIn}} events in, {{windowRelayed}} relayed, {{windowFailed}} failed sends (retries and dead letters). Kept in memory since the start; newest minute first (UTC).</p>
<table id="activity">
<tr><th>minute</th><th class="num">events in</th><th class="num">relayed</th><th class="num">retries</th><th class="num">dead letters</th><th class="num">inbound dead</th><th class="num">refused</th><th>relayed / failed</th></tr>
{{#minutes}}
<tr class="minute"><td>{{time}}</td><td class="num">{{eventsIn}}</td><td class="num">{{relayed}}</td><td class="num">{{retries}}</td><td class="num">{{deadLetters}}</td><td class="num">{{inboundDeadLetters}}</td><td class="num">{{refused}}</td><td><span class="bar bar-relayed" style="width: {{relayedWidth}}%"></span><br><span class="bar bar-failed" style="width: {{failedWidth}}%"></span></td></tr>
{{/minutes}}
</table>
</body>
</html>
"""#
}
