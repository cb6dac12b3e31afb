package lab.camel.app.routes;

import org.apache.camel.Exchange;

/** Per-stack work around Camel API differences, called by {@link ApiEdge}. The camel3 stack has none. */
public interface StackHooks {

    /** Called first on every API exchange. */
    void onApiIn(Exchange exchange);
}
