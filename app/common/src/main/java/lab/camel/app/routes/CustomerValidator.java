package lab.camel.app.routes;

import java.util.Iterator;
import java.util.Set;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.springframework.stereotype.Component;

/** Checks a POST /api/customers body; throws {@link ValidationException} naming the first bad field. */
@Component
public class CustomerValidator {

    private static final Pattern EMAIL = Pattern.compile("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$");
    private static final Set<String> TIERS = Set.of("gold", "silver", "bronze");
    private static final Set<String> ADDRESS_FIELDS = Set.of("street", "city", "zip", "country");

    /** @return the body to send to the backend (only the fields it accepts) */
    public ObjectNode validate(String body) {
        if (body == null || body.isBlank()) {
            throw new ValidationException("body", "a JSON object is required");
        }
        JsonNode node;
        try {
            node = Json.read(body);
        } catch (IllegalArgumentException e) {
            throw new ValidationException("body", "malformed JSON");
        }
        if (!node.isObject()) {
            throw new ValidationException("body", "a JSON object is required");
        }
        ObjectNode out = Json.object();
        out.put("firstName", requiredText(node, "firstName", 100));
        out.put("lastName", requiredText(node, "lastName", 100));
        String email = requiredText(node, "email", 254);
        if (!EMAIL.matcher(email).matches()) {
            throw new ValidationException("email", "must be an e-mail address");
        }
        out.put("email", email);
        JsonNode phone = node.get("phone");
        if (phone != null && !phone.isNull()) {
            if (!phone.isTextual()) throw new ValidationException("phone", "must be a string");
            out.put("phone", phone.asText());
        }
        JsonNode tier = node.get("tier");
        if (tier != null && !tier.isNull()) {
            if (!tier.isTextual() || !TIERS.contains(tier.asText())) {
                throw new ValidationException("tier", "must be one of gold, silver, bronze");
            }
            out.put("tier", tier.asText());
        }
        JsonNode address = node.get("address");
        if (address != null && !address.isNull()) {
            if (!address.isObject()) throw new ValidationException("address", "must be an object");
            ObjectNode a = out.putObject("address");
            for (Iterator<String> it = address.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!ADDRESS_FIELDS.contains(f)) throw new ValidationException("address." + f, "unknown field");
                JsonNode v = address.get(f);
                if (!v.isTextual()) throw new ValidationException("address." + f, "must be a string");
                a.put(f, v.asText());
            }
        }
        return out;
    }

    private static String requiredText(JsonNode node, String field, int max) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) throw new ValidationException(field, "is required");
        if (!v.isTextual()) throw new ValidationException(field, "must be a string");
        String s = v.asText().trim();
        if (s.isEmpty()) throw new ValidationException(field, "must not be blank");
        if (s.length() > max) throw new ValidationException(field, "is longer than " + max + " characters");
        return s;
    }
}
