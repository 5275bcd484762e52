import Foundation
import IMCore
import IMStore
import Testing

/// `StoreLocation.redact` and the store's errors on well-formed and malformed URLs: the password never
/// shows, whatever is wrong with the URL (docs/architecture.md, "Secrets in errors and logs").
@Suite struct StoreRedactionTests {
    /// A password with an unencoded `@` used to print from its second part on (`imb:***@cd@db`).
    @Test func aPasswordWithAnAtSignIsHiddenWhole() throws {
        #expect(StoreLocation.redact("postgres://imb:ab@cd@db/imb") == "postgres://imb:***@db/imb")
        #expect { try StoreLocation(parsing: "postgres://imb:ab@cd@db/imb", environment: [:]) } throws: { error in
            let message = (error as? IMError)?.message ?? ""
            return message.contains("'postgres://imb:***@db/imb'") && !message.contains("cd") && message.contains("more than one '@'")
        }
    }

    @Test(arguments: [
        ("postgres://u:pw@h/d", "postgres://u:***@h/d"),
        ("postgres://imb:S3CR3T-1@S3CR3T-2@db:5432/imb?schema=x", "postgres://imb:***@db:5432/imb?schema=x"),
        ("postgres://imb:S3CR3T/x?y#z@db/imb", "postgres://imb:***@db/imb"),
        ("postgres://S3CR3T@x@db/imb", "postgres://***@db/imb"),
        ("postgres://imb@db/imb", "postgres://imb@db/imb"),
        ("postgres://imb:S3CR3T%40x@db/imb", "postgres://imb:***@db/imb"),
        ("postgres://imb%3AS3CR3T@db/imb", "postgres://***@db/imb"),
        ("postgresql:/imb:S3CR3T@db/imb", "postgresql:***@db/imb"),
        ("postgres:imb:S3CR3T@db/imb", "postgres:***@db/imb"),
        ("//imb:S3CR3T@db/imb", "//imb:***@db/imb"),
        ("imb:S3CR3T@db/imb", "imb:***@db/imb"),
        ("postgres://imb:S3CR3T/imb", "postgres://imb:***/imb"),
        ("postgres://imb:S3CR3T@db:S3CR3T/imb", "postgres://imb:***@db:***/imb"),
        ("postgres://imb@db/imb?password=S3CR3T", "postgres://imb@db/imb?password=***"),
        ("postgres://imb@db/imb?sslmode=disable&sslpassword=S3CR3T&S3CR3T", "postgres://imb@db/imb?sslmode=disable&sslpassword=***&***"),
        ("postgres://imb@db/imb?schema=east&tls=disable", "postgres://imb@db/imb?schema=east&tls=disable"),
        ("postgres://imb:S3CR3T@db/imb#S3CR3T", "postgres://imb:***@db/imb#***"),
        ("postgres://imb:S3CR3T@[::1]:5432/imb", "postgres://imb:***@[::1]:5432/imb"),
        ("/var/lib/imbridge/bridge.sqlite", "/var/lib/imbridge/bridge.sqlite"),
    ])
    func redactHidesEveryPasswordForm(_ text: String, _ expected: String) {
        #expect(StoreLocation.redact(text) == expected)
        #expect(!StoreLocation.redact(text).contains("S3CR3T"))
    }

    /// Every refused form: the error shows the redacted URL, never the password.
    @Test(arguments: [
        "postgres://imb:S3CR3T@x@db/imb", "postgres://imb:S3CR3T/x@db/imb", "postgresql:/imb:S3CR3T@db/imb",
        "postgres:imb:S3CR3T@db/imb", "postgres//imb:S3CR3T@db/imb", "mysql://imb:S3CR3T@db/imb",
        "postgres://imb@db/imb?password=S3CR3T", "postgres://imb@db/imb?sslpassword=S3CR3T&sslmode=disable",
        "postgres://imb:S3CR3T@db/imb?schema=bad-name", "postgres://imb:S3CR3T@db/imb?tls=require",
        "postgres://imb:S3CR3T@/imb", "postgres://imb:S3CR3T@db", "postgres://:S3CR3T@db/imb",
        "postgres://imb:S3CR3T%40x@db/imb?x=1", "postgres://imb:S3CR3T/imb", "postgres://imb:S3CR3T@db:5x/imb",
        "postgres://imb:S3CR3T@db/imb#S3CR3T",
    ])
    func refusedURLsShowNoPassword(_ text: String) {
        #expect { try StoreLocation(parsing: text, environment: [:]) } throws: { error in
            let message = (error as? IMError)?.message ?? "\(error)"
            return message.contains("***") && !message.contains("S3CR3T")
        }
    }

    @Test func anSQLitePathWithAnAtSignIsShownRedacted() throws {
        let location = try StoreLocation(parsing: "/nonexistent/imb:S3CR3T@db/bridge.sqlite", environment: [:])
        let problem = try #require(location.accessProblem())
        #expect(problem.contains("/nonexistent/imb:***@db") && !problem.contains("S3CR3T"), "\(problem)")
    }

    @Test func freeTextHidesTheCredentialsOfEveryURL() {
        #expect(Redaction.text("GET https://app:S3CR3T@x@api.example/v1?token=S3CR3T&page=2 failed") == "GET https://***@api.example/v1?token=***&page=2 failed")
        #expect(Redaction.text("at postgres://u:pw@db:5432/x and http://a:b@c/") == "at postgres://***@db:5432/x and http://***@c/")
        #expect(Redaction.text("'postgres://imb:***@db/imb'") == "'postgres://imb:***@db/imb'")
        #expect(Redaction.text("?sslpassword=S3CR3T&application_name=x") == "?sslpassword=***&application_name=x")
    }
}
