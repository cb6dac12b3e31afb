package lab.camel.app.tomcat;

import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.stereotype.Component;

/**
 * Puts {@link ConnectorTagValve} on the app's context: the routes compress AJP answers themselves. The AJP connector
 * and every Tomcat knob come from the lab's tuning kit (kit/README.md), as for any service.
 */
@Component
public class ConnectorTagCustomizer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
        factory.addContextValves(new ConnectorTagValve());
    }
}
