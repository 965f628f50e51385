import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The application ``LiveListServer/application(host:port:demoPage:onRunning:)`` returns: `inner`
/// (the HTTP server) and the live list server as two services of one group, the live list server
/// second — a group shuts its services down in reverse order, so the live list server closes its
/// WebSockets with 1001 and drains them before the HTTP server stops (whose own shutdown would
/// close them with 1000, and wait without limit for a peer that stopped reading).
struct LiveListApplication<Inner: ApplicationProtocol>: ApplicationProtocol {
    typealias Responder = Inner.Responder

    let inner: Inner
    let liveList: LiveListServer

    var responder: Responder {
        get async throws { try await inner.responder }
    }

    var server: HTTPServerBuilder { inner.server }
    var eventLoopGroup: any EventLoopGroup { inner.eventLoopGroup }
    var configuration: ApplicationConfiguration { inner.configuration }
    var logger: Logger { inner.logger }
    func onServerRunning(_ channel: any Channel) async { await inner.onServerRunning(channel) }

    func run() async throws {
        let group = ServiceGroup(configuration: .init(services: [inner, liveList], logger: inner.logger))
        try await group.run()
    }
}
