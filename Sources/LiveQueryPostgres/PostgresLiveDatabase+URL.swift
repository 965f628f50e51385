import Foundation
import NIOSSL
import PostgresNIO

extension PostgresLiveDatabase {
    /// A connection configuration from a PostgreSQL URL, as libpq reads one:
    /// `postgres://user:password@host:port/database?sslmode=require`. A host that is a folder
    /// (`postgres:///app?host=/var/run/postgresql`, or percent-encoded in the authority) is the
    /// folder of the server's Unix socket. `sslmode` is `disable` (the default), `prefer` or
    /// `require` (certificates verified by the system's roots); the user defaults to `postgres`.
    public static func configuration(url text: String) throws(PostgresLiveQueryError) -> PostgresConnection.Configuration {
        guard let components = URLComponents(string: text), components.scheme == "postgres" || components.scheme == "postgresql" else {
            throw .invalidURL(text, reason: "expected postgres://user:password@host:port/database")
        }
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] { options[item.name] = item.value ?? "" }
        let user = components.user?.removingPercentEncoding ?? options["user"] ?? "postgres"
        let password = components.password?.removingPercentEncoding ?? options["password"]
        var database = String(components.path.drop { $0 == "/" }).removingPercentEncoding ?? ""
        if database.isEmpty { database = options["dbname"] ?? user }
        let port = components.port ?? options["port"].flatMap { Int($0) } ?? 5432
        let host = options["host"] ?? components.percentEncodedHost?.removingPercentEncoding ?? ""
        if host.hasPrefix("/") {
            return PostgresConnection.Configuration(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS
        switch options["sslmode"] ?? "disable" {
        case "disable", "allow": tls = .disable
        case let mode where mode == "prefer" || mode == "require" || mode == "verify-ca" || mode == "verify-full":
            do {
                let context = try NIOSSLContext(configuration: .makeClientConfiguration())
                tls = mode == "prefer" ? .prefer(context) : .require(context)
            } catch {
                throw .invalidURL(text, reason: "TLS could not be set up: \(error)")
            }
        case let mode:
            throw .invalidURL(text, reason: "sslmode \(mode) is not one of disable, prefer, require")
        }
        return PostgresConnection.Configuration(host: host.isEmpty ? "localhost" : host, port: port, username: user, password: password,
                                                database: database, tls: tls)
    }
}
