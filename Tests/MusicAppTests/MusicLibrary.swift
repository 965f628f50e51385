import Foundation
import GRDB

// The music app of issue 17, written from the README alone: artist ⋈ album ⋈ track, 20,000
// tracks identified by UUID, sections by artist.

struct Artist: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let albums = hasMany(Album.self)
    var id: Int64
    var name: String
}

struct Album: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let artist = belongsTo(Artist.self)
    static let tracks = hasMany(Track.self)
    var id: Int64
    var artistId: Int64
    var title: String
    var year: Int
}

struct Track: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let album = belongsTo(Album.self)
    var id: Int64?
    var uuid: UUID
    var albumId: Int64
    var number: Int
    var title: String
}

/// A track with its album and artist, as a cell shows it.
struct TrackRow: Decodable, FetchableRecord, Sendable {
    var track: Track
    var album: Album
    var artist: Artist
}

enum MusicLibrary {
    static let artists = 100, albumsPerArtist = 10, tracksPerAlbum = 20

    /// A library of 20,000 tracks in a temporary file.
    static func make() throws -> DatabasePool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("music-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: directory.appendingPathComponent("music.sqlite").path)
        try pool.write { db in
            try db.create(table: "artist") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
            }
            try db.create(table: "album") { table in
                table.primaryKey("id", .integer)
                table.belongsTo("artist").notNull()
                table.column("title", .text).notNull()
                table.column("year", .integer).notNull()
            }
            try db.create(table: "track") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("uuid", .blob).notNull().unique()
                table.belongsTo("album").notNull()
                table.column("number", .integer).notNull()
                table.column("title", .text).notNull()
            }
            var random = SystemRandomNumberGenerator()
            for artist in 1...artists {
                try Artist(id: Int64(artist), name: "Artist \(String(format: "%03d", artist))").insert(db)
                for album in 1...albumsPerArtist {
                    let albumID = Int64((artist - 1) * albumsPerArtist + album)
                    try Album(id: albumID, artistId: Int64(artist), title: "Album \(album)", year: 1960 + Int.random(in: 0..<60, using: &random)).insert(db)
                    for number in 1...tracksPerAlbum {
                        try Track(id: nil, uuid: UUID(), albumId: albumID, number: number, title: "Track \(number)").insert(db)
                    }
                }
            }
        }
        return pool
    }
}
