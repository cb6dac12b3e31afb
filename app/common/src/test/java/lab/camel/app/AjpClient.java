package lab.camel.app;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/** A minimal AJP/1.3 client (what httpd's mod_proxy_ajp sends), enough for a GET round trip in the tests. */
public final class AjpClient {

    private static final String[] RESPONSE_HEADERS = {"Content-Type", "Content-Language", "Content-Length", "Date",
        "Last-Modified", "Location", "Set-Cookie", "Set-Cookie2", "Servlet-Engine", "Status", "WWW-Authenticate"};

    public static final class Response {
        public int status;
        public final Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        public byte[] body = new byte[0];

        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    private AjpClient() { }

    /** Sends one GET over a new AJP connection; secret null sends none. */
    public static Response get(int port, String uri, String secret, Map<String, String> headers) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout(10000);
            OutputStream out = socket.getOutputStream();
            out.write(forwardRequest(uri, secret, headers));
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            Response response = new Response();
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            while (true) {
                int a = in.read();
                if (a < 0) break;                       // connection closed
                int b = in.read();
                if (a != 'A' || b != 'B') throw new IOException("not an AJP response packet: " + a + "," + b);
                int len = in.readUnsignedShort();
                byte[] payload = new byte[len];
                in.readFully(payload);
                Reader r = new Reader(payload);
                int type = r.u8();
                if (type == 4) {                        // SEND_HEADERS
                    response.status = r.u16();
                    r.string();
                    int n = r.u16();
                    for (int i = 0; i < n; i++) {
                        int code = r.u16();
                        String name = (code & 0xFF00) == 0xA000 ? RESPONSE_HEADERS[(code & 0xFF) - 1] : r.stringOfLength(code);
                        response.headers.put(name, r.string());
                    }
                } else if (type == 3) {                 // SEND_BODY_CHUNK
                    int n = r.u16();
                    body.write(payload, r.pos, n);
                } else if (type == 5) {                 // END_RESPONSE
                    break;
                } else if (type == 6) {                 // GET_BODY_CHUNK: we have no body
                    out.write(new byte[] {0x12, 0x34, 0, 0});
                    out.flush();
                }
            }
            response.body = body.toByteArray();
            return response;
        }
    }

    static byte[] forwardRequest(String uri, String secret, Map<String, String> extra) {
        Writer w = new Writer();
        w.u8(2);                       // FORWARD_REQUEST
        w.u8(2);                       // GET
        w.string("HTTP/1.1");
        String path = uri;
        String query = null;
        int q = uri.indexOf('?');
        if (q >= 0) {
            path = uri.substring(0, q);
            query = uri.substring(q + 1);
        }
        w.string(path);
        w.string("127.0.0.1");
        w.string("localhost");
        w.string("localhost");
        w.u16(80);
        w.u8(0);                       // not SSL
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Host", "localhost");
        headers.put("Accept", "application/json");
        headers.putAll(extra);
        w.u16(headers.size());
        headers.forEach((k, v) -> {
            w.string(k);
            w.string(v);
        });
        if (query != null) {
            w.u8(0x05);
            w.string(query);
        }
        if (secret != null) {
            w.u8(0x0C);                // SC_A_SECRET
            w.string(secret);
        }
        w.u8(0xFF);                    // end of attributes
        byte[] data = w.bytes();
        byte[] packet = new byte[data.length + 4];
        packet[0] = 0x12;
        packet[1] = 0x34;
        packet[2] = (byte) (data.length >> 8);
        packet[3] = (byte) data.length;
        System.arraycopy(data, 0, packet, 4, data.length);
        return packet;
    }

    static final class Writer {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        void u8(int v) { out.write(v); }

        void u16(int v) {
            out.write(v >> 8);
            out.write(v);
        }

        void string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u16(b.length);
            out.write(b, 0, b.length);
            out.write(0);
        }

        byte[] bytes() { return out.toByteArray(); }
    }

    static final class Reader {
        private final byte[] b;
        int pos;

        Reader(byte[] b) { this.b = b; }

        int u8() { return b[pos++] & 0xFF; }

        int u16() { return (u8() << 8) | u8(); }

        String string() {
            int len = u16();
            if (len == 0xFFFF) return null;
            return stringOfLength(len);
        }

        String stringOfLength(int len) {
            String s = new String(b, pos, len, StandardCharsets.UTF_8);
            pos += len + 1;            // and the NUL terminator
            return s;
        }
    }
}
