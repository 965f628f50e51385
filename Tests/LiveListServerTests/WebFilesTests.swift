import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import LiveListServer
import Testing

@Suite("The web client's files")
struct WebFilesTests {
    static let web = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Web").resolvingSymlinksInPath()

    /// Web/'s modules and pages, by path within it.
    static func webFiles() throws -> [String: Data] {
        var files: [String: Data] = [:]
        let base = web.standardizedFileURL.path
        let enumerator = try #require(FileManager.default.enumerator(at: web, includingPropertiesForKeys: nil))
        for case let url as URL in enumerator where ["js", "html"].contains(url.pathExtension) {
            let path = url.resolvingSymlinksInPath().standardizedFileURL.path
            files[String(path.dropFirst(base.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }

    @Test("The server's resource bundle holds every module and page of Web/, byte for byte")
    func bundledFilesAreWebs() throws {
        let files = try Self.webFiles()
        #expect(files.keys.contains("livelist.js") && files.keys.contains("livelist-view.js") && files.keys.contains("demo.html"))
        #expect(files.keys.contains("livelist/connection.js"), "the entry module's modules")
        #expect(Set(WebFiles.files.keys) == Set(files.keys))
        for (name, data) in files {
            #expect(WebFiles.files[name].map { Data($0.body.readableBytesView) } == data, "\(name) differs from Web/\(name)")
        }
    }

    @Test("The server sends every module with a JavaScript type, the demo page only when asked, and 404 for the rest")
    func served() async throws {
        let fixture = try await WireFixture.start(rows: 1, seed: 1)
        let base = "http://127.0.0.1:\(fixture.port)"
        let modules = try Self.webFiles().filter { $0.key.hasSuffix(".js") }
        #expect(modules.count >= 3)
        for (name, body) in modules {
            let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/live/\(name)")))
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200, "\(name)")
            #expect(http.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/javascript") == true)
            #expect(data == body, "\(name) as Web/ has it")
        }
        for name in ["/", "/live/jsconfig.json", "/live/livelist/nope.js", "/live/../Package.swift"] {
            let (_, response) = try await URLSession.shared.data(from: try #require(URL(string: base + name)))
            #expect((response as? HTTPURLResponse)?.statusCode == 404, "\(name)")
        }
        #expect(LiveListServer.webFileResponse("nope.js").status == .notFound)
        await fixture.stop()
    }
}
