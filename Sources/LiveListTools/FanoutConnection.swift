import Foundation
import NIOCore
import NIOPosix

/// What a bare load-generator connection hands each server message to, on its event loop.
protocol FrameRecording: AnyObject, Sendable {
    func note(_ utf8: [UInt8], at time: Double)
}

extension FanoutRecorder: FrameRecording {}

/// One subscriber of the fan-out load generator on a bare NIO channel: the WebSocket handshake
/// by hand, one subscribe frame, then every server frame parsed in place on the event loop and
/// handed to its recorder (a `FanoutRecorder`, or `pg.mixed`'s `MixedRecorder`). No task, no
/// string per frame: a load generator that costs a few microseconds a frame, so that the latency
/// it measures is the server's, not its own.
///
/// Server frames are unmasked (RFC 6455 §5.1); text and continuation frames are joined into
/// messages; a ping gets its pong; a close closes the channel.
final class FanoutConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Stage { case handshake, frames }

    private let host: String
    private let path: String
    private let subscribe: [UInt8]
    private let recorder: any FrameRecording
    private var stage = Stage.handshake
    private var buffer: ByteBuffer?
    private var message: [UInt8] = []

    init(host: String, path: String, subscribe: [UInt8], recorder: any FrameRecording) {
        self.host = host
        self.path = path
        self.subscribe = subscribe
        self.recorder = recorder
    }

    func channelActive(context: ChannelHandlerContext) {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if buffer == nil {
            buffer = incoming
        } else {
            buffer?.writeBuffer(&incoming)
        }
        if stage == .handshake {
            guard let view = buffer?.readableBytesView, let end = Self.endOfHead(view) else { return }
            let head = String(decoding: view[view.startIndex..<end], as: UTF8.self)
            buffer?.moveReaderIndex(forwardBy: end + 4 - view.startIndex)
            guard head.hasPrefix("HTTP/1.1 101") else {
                context.close(promise: nil)
                return
            }
            stage = .frames
            context.writeAndFlush(wrapOutboundOut(Self.maskedFrame(opcode: 0x1, payload: subscribe, allocator: context.channel.allocator)), promise: nil)
        }
        readFrames(context: context)
        if buffer?.readableBytes == 0 { buffer = nil } else { buffer?.discardReadBytes() }
    }

    private func readFrames(context: ChannelHandlerContext) {
        while var view = buffer, let first = view.readInteger(as: UInt8.self), let second = view.readInteger(as: UInt8.self) {
            var length = Int(second & 0x7F)
            if length == 126 {
                guard let extended = view.readInteger(as: UInt16.self) else { return }
                length = Int(extended)
            } else if length == 127 {
                guard let extended = view.readInteger(as: UInt64.self) else { return }
                length = Int(truncatingIfNeeded: extended)
            }
            guard let payload = view.readBytes(length: length) else { return }
            buffer = view
            let fin = first & 0x80 != 0
            switch first & 0x0F {
            case 0x0, 0x1:
                if fin, message.isEmpty {
                    recorder.note(payload, at: Date().timeIntervalSince1970)
                } else {
                    message += payload
                    if fin {
                        recorder.note(message, at: Date().timeIntervalSince1970)
                        message.removeAll(keepingCapacity: true)
                    }
                }
            case 0x9:
                context.writeAndFlush(wrapOutboundOut(Self.maskedFrame(opcode: 0xA, payload: payload, allocator: context.channel.allocator)), promise: nil)
            case 0x8:
                context.close(promise: nil)
                return
            default:
                break
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private static func endOfHead(_ view: ByteBufferView) -> Int? {
        let bytes = Array(view)
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return view.startIndex + index
        }
        return nil
    }

    /// A client frame: FIN, `opcode`, a random mask (RFC 6455 §5.3).
    static func maskedFrame(opcode: UInt8, payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var frame = allocator.buffer(capacity: payload.count + 14)
        frame.writeInteger(0x80 | opcode)
        if payload.count < 126 {
            frame.writeInteger(0x80 | UInt8(payload.count))
        } else if payload.count <= Int(UInt16.max) {
            frame.writeInteger(UInt8(0x80 | 126))
            frame.writeInteger(UInt16(payload.count))
        } else {
            frame.writeInteger(UInt8(0x80 | 127))
            frame.writeInteger(UInt64(payload.count))
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame.writeBytes(mask)
        frame.writeBytes(payload.enumerated().map { $1 ^ mask[$0 & 3] })
        return frame
    }
}

/// Opens the load generator's bare connections: at most `inFlight` connects at a time, so the
/// server's accept backlog never overflows.
enum FanoutConnections {
    static func open(url: String, subscribe: [UInt8], recorders: [any FrameRecording], group: any EventLoopGroup, inFlight: Int = 256) throws -> [any Channel] {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw BenchFailure("fan-out: bad URL \(url)")
        }
        let path = components.path.isEmpty ? "/" : components.path
        var channels: [any Channel] = []
        channels.reserveCapacity(recorders.count)
        var start = 0
        while start < recorders.count {
            let batch = recorders[start..<min(recorders.count, start + inFlight)]
            let futures = batch.map { recorder in
                ClientBootstrap(group: group)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                FanoutConnectionHandler(host: "\(host):\(port)", path: path, subscribe: subscribe, recorder: recorder))
                        }
                    }
                    .connect(host: host, port: port)
            }
            for future in futures { channels.append(try future.wait()) }
            start += inFlight
        }
        return channels
    }
}
