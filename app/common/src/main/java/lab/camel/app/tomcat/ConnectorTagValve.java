package lab.camel.app.tomcat;

import java.io.IOException;

import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.tomcat.util.http.MimeHeaders;

/**
 * Tells the routes which connector a request came in on, as the header {@value #HEADER} (http | ajp). A value
 * sent by the client is removed first. The API uses it to compress AJP responses (Tomcat only compresses HTTP).
 * (Written against Tomcat's own types only, so it compiles unchanged on Tomcat 9 (javax) and 10.1 (jakarta).)
 */
public class ConnectorTagValve extends ValveBase {

    public static final String HEADER = "X-Lab-Connector";

    public ConnectorTagValve() {
        super(true);
    }

    @Override
    public void invoke(Request request, Response response) throws IOException {
        MimeHeaders headers = request.getCoyoteRequest().getMimeHeaders();
        headers.removeHeader(HEADER);
        boolean ajp = request.getConnector().getProtocolHandler() instanceof AbstractAjpProtocol;
        headers.addValue(HEADER).setString(ajp ? "ajp" : "http");
        try {
            getNext().invoke(request, response);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) { // ServletException: javax on Tomcat 9, jakarta on Tomcat 10.1
            throw ConnectorTagValve.<RuntimeException>sneaky(e);
        }
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> T sneaky(Throwable t) throws T {
        throw (T) t;
    }
}
