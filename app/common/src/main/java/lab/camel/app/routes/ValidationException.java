package lab.camel.app.routes;

/** A request body that the API refuses (400), naming the offending field. */
public class ValidationException extends RuntimeException {
    private final String field;

    public ValidationException(String field, String message) {
        super(message);
        this.field = field;
    }

    public String getField() { return field; }
}
