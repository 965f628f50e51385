import Foundation
import NIOCore

/// The web client's files — the ES modules and the demo page of the repository's `Web/` — as the
/// server sends them. SwiftPM copies the folder into this module's resource bundle
/// (`resources: [.copy("Web")]`), next to the executable (`.build/<configuration>/`); they are
/// read from it once, at the first use. A binary copied elsewhere takes the bundle folder
/// `LiveList_LiveListServer.resources` with it (else `Bundle.module` stops the process, naming
/// where it looked).
enum WebFiles {
    struct File: Sendable {
        let contentType: String
        let body: ByteBuffer
    }

    /// By path within `Web/`: `livelist.js`, `livelist/connection.js`, `demo.html`.
    static let files: [String: File] = load()

    /// The JavaScript modules' paths, in order: what the server's routes serve.
    static var modules: [String] { files.keys.filter { $0.hasSuffix(".js") }.sorted() }

    /// The JavaScript modules and HTML pages of the bundle's `Web` folder, at any depth.
    static func load() -> [String: File] {
        guard let folder = Bundle.module.url(forResource: "Web", withExtension: nil),
              let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [:] }
        let base = folder.resolvingSymlinksInPath().standardizedFileURL.path
        var files: [String: File] = [:]
        for case let url as URL in enumerator {
            let contentType: String
            switch url.pathExtension {
            case "js": contentType = "text/javascript; charset=utf-8"
            case "html": contentType = "text/html; charset=utf-8"
            default: continue
            }
            let path = url.resolvingSymlinksInPath().standardizedFileURL.path
            guard path.hasPrefix(base + "/"), let data = FileManager.default.contents(atPath: path) else { continue }
            files[String(path.dropFirst(base.count + 1))] = File(contentType: contentType, body: ByteBuffer(bytes: data))
        }
        return files
    }
}
