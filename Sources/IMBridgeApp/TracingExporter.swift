import IMHTTP
import Logging
import ServiceLifecycle
import Tracing
#if OTLP
import OTel
#endif

/// The span exporter `tracing:` turns on (docs/operations.md, "Tracing"): swift-otel's tracer, bootstrapped
/// as the process's tracer, with its OTLP/HTTP exporter as a service of the bridge's group. Only a build
/// with the package's `OTLP` trait has it; without one (the default build) `tracing.otlp_endpoint` is
/// refused when the configuration is read, and the bridge keeps the no-op tracer: `MessageSpans` stays
/// off and makes nothing.
enum TracingExporter {
    /// Bootstraps the tracer and returns the service that exports its spans; nil when `tracing:` is off.
    static func start(_ settings: TracingSettings, logger: Logger) throws -> (any Service)? {
        guard let endpoint = settings.otlpEndpoint else { return nil }
        #if OTLP
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.exporter = .otlp
        // swift-otel sends to an endpoint set in code as it is: the traces path is added here, as OTLP's
        // base-endpoint rule says (`OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`).
        configuration.traces.otlpExporter.endpoint = (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/v1/traces"
        configuration.traces.otlpExporter.protocol = settings.otlpProtocol == "http/json" ? .httpJSON : .httpProtobuf
        configuration.propagators = [.traceContext]
        configuration.diagnosticLogger = .custom(logger)
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        MessageSpans.enable()
        logger.notice("tracing: spans exported over OTLP", metadata: ["endpoint": "\(endpoint)", "protocol": "\(settings.otlpProtocol)",
                                                                   "service_name": "\(settings.serviceName)"])
        return service
        #else
        _ = endpoint
        return nil
        #endif
    }
}
