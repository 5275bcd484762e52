import Foundation
import IMCore
import IMHTTP
import IMRelay
import IMStore

/// `GET /trace?id=ID` (or `?conversation=[BACKEND:]KIND:ID&at=TIME[&window=S]`): `imbridge trace` on the
/// status page's listener. JSON (`{"messages": [...]}`, as `imbridge trace --json`) by default; with
/// `format=html` the same hops as a page, which is where the status page's search box leads
/// (docs/status-page.md, "Where is my message"). Error texts are shown as the status page shows dead
/// letters' reasons (`StatusContext.publicReason`).
enum TracePage {
    static func answer(_ request: HTTPRequestData, engine: RelayEngine) async -> HTTPResponseData {
        var query: [String: String] = [:]
        for item in request.query where query[item.name] == nil { query[item.name] = item.value.trimmingCharacters(in: .whitespaces) }
        let html = query["format"] == "html"
        let tracer = MessageTracer(routes: engine.routes.routes, now: engine.clock.nowMs())
        let traces: [MessageTrace]
        do {
            if let id = query["id"], !id.isEmpty {
                traces = try await engine.store.reading { try tracer.traces(id: id, $0) }
            } else if let text = query["conversation"], !text.isEmpty, let at = query["at"].flatMap(MessageTracer.parseTime) {
                let (backend, conversation) = try MessageTracer.parseConversation(text)
                let windowMs = Int64(query["window"].flatMap(Int.init) ?? 300) * 1000
                traces = try await engine.store.reading { try tracer.traces(conversation: conversation, on: backend, at: at, windowMs: windowMs, $0) }
            } else {
                return refusal("give id=MESSAGE_ID, or conversation=[BACKEND:]KIND:ID with at=TIME", html: html, status: 400)
            }
        } catch let error as IMError where error.code == .invalidArgument {
            return refusal(error.message, html: html, status: 400)
        } catch {
            // The store's error text may name a PostgreSQL host: only its kind is shown.
            return refusal("the store did not answer", html: html, status: 503)
        }
        let shown = traces.map(redacted)
        if html { return page(body: "<pre id=\"trace\">\(escape(MessageTrace.text(shown)))</pre>", query: query["id"] ?? "") }
        guard let body = try? MessageTrace.json(shown) else { return refusal("the trace did not encode", html: false, status: 500) }
        return HTTPResponseData(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: Array(body))
    }

    /// Error texts, reasons and notes as the status page shows dead letters' reasons.
    static func redacted(_ trace: MessageTrace) -> MessageTrace {
        var trace = trace
        for index in trace.hops.indices {
            trace.hops[index].error = trace.hops[index].error.map { StatusContext.publicReason($0) }
            trace.hops[index].reason = trace.hops[index].reason.map { StatusContext.publicReason($0) }
        }
        return trace
    }

    static func refusal(_ message: String, html: Bool, status: Int) -> HTTPResponseData {
        guard html else { return .json(["error": message], status: status) }
        var response = page(body: "<p class=\"warn\">\(escape(message))</p>", query: "")
        response.status = status
        return response
    }

    /// The search box, also on the status page (`StatusPage.template`).
    static func form(_ value: String) -> String {
        """
        <form method="get" action="trace" id="trace-search"><label>Where is my message? <input type="search" name="id" \
        value="\(escape(value))" placeholder="source or target message id"></label><input type="hidden" name="format" value="html"> \
        <button type="submit">trace</button></form>
        """
    }

    static func page(body: String, query: String) -> HTTPResponseData {
        let html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>IMBridge trace</title>
            <style>body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; } pre { background: #f4f6f9; padding: 1em; overflow-x: auto; }
            .warn { background: #fbd5d5; padding: .5em; }</style></head>
            <body><h1>Where is my message?</h1><p><a href="status">status</a></p>
            \(form(query))
            \(body)
            </body></html>
            """
        return HTTPResponseData(status: 200, headers: [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", StatusPage.contentSecurityPolicy),
        ], body: Array(html.utf8))
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
