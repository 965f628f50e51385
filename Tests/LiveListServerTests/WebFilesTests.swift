import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import LiveListServer
import Testing

@Suite("The web client's files")
struct WebFilesTests {
    static let web = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Web")

    @Test("The files the server carries are Web/'s (run Scripts/embed-web.sh after changing one)")
    func embeddedFilesAreCurrent() throws {
        for name in ["livelist.js", "livelist-view.js", "demo.html"] {
            var text = try String(contentsOf: Self.web.appendingPathComponent(name), encoding: .utf8)
            while text.hasSuffix("\n") { text.removeLast() }
            #expect(_WebFiles.files[name]?.body == text, "\(name) differs from Web/\(name)")
        }
    }

    @Test("The server sends the modules with a JavaScript type, the demo page only when asked, and 404 for the rest")
    func served() async throws {
        let fixture = try await WireFixture.start(rows: 1, seed: 1)
        let base = "http://127.0.0.1:\(fixture.port)"
        for name in ["livelist.js", "livelist-view.js"] {
            let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/live/\(name)")))
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200)
            #expect(http.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/javascript") == true)
            #expect(String(decoding: data, as: UTF8.self).contains("export class"))
        }
        let (_, response) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/")))
        #expect((response as? HTTPURLResponse)?.statusCode == 404)
        #expect(LiveListServer.webFileResponse("nope.js").status == .notFound)
        await fixture.stop()
    }
}
