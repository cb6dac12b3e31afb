package lab.camel.app.routes;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.springframework.stereotype.Component;

/** Turns the backend's documents into the API's: fields renamed and flattened, computed fields added. */
@Component
public class CustomerTransformer {

    /** Backend customer → API customer. */
    public ObjectNode customer(JsonNode c) {
        ObjectNode out = Json.object();
        String first = text(c, "firstName");
        String last = text(c, "lastName");
        String email = text(c, "email");
        String tier = text(c, "tier");
        out.set("customerId", c.get("id"));
        out.put("fullName", ((first == null ? "" : first) + " " + (last == null ? "" : last)).trim());
        out.put("givenName", first);
        out.put("familyName", last);
        out.put("email", email);
        out.put("emailDomain", email != null && email.contains("@") ? email.substring(email.indexOf('@') + 1) : null);
        out.put("phone", text(c, "phone"));
        out.put("tier", tier);
        out.put("tierRank", tierRank(tier));
        out.put("discountPercent", discount(tier));
        JsonNode address = c.path("address");
        out.put("street", text(address, "street"));
        out.put("city", text(address, "city"));
        out.put("postalCode", text(address, "zip"));
        out.put("country", text(address, "country"));
        out.put("mailingLabel", mailingLabel(first, last, address));
        String createdAt = text(c, "createdAt");
        out.put("customerSince", createdAt);
        out.put("customerForDays", daysSince(createdAt));
        out.put("hasNotes", text(c, "notes") != null && !text(c, "notes").isBlank());
        return out;
    }

    /** Customer + its orders + its account → one summary document. */
    public ObjectNode summary(JsonNode customer, JsonNode orders, JsonNode account) {
        ObjectNode out = Json.object();
        out.set("customer", customer(customer));

        ObjectNode o = out.putObject("orders");
        int count = 0;
        int items = 0;
        BigDecimal total = BigDecimal.ZERO;
        String lastOrderAt = null;
        Map<String, Integer> byStatus = new TreeMap<>();
        ArrayNode recent = Json.MAPPER.createArrayNode();
        if (orders != null && orders.isArray()) {
            for (JsonNode order : orders) {
                count++;
                total = total.add(decimal(order.get("amount")));
                String status = text(order, "status");
                byStatus.merge(status == null ? "unknown" : status, 1, Integer::sum);
                for (JsonNode item : order.path("items")) {
                    items += item.path("quantity").asInt(0);
                }
                String placedAt = text(order, "placedAt");
                if (placedAt != null && (lastOrderAt == null || placedAt.compareTo(lastOrderAt) > 0)) {
                    lastOrderAt = placedAt;
                }
                ObjectNode r = recent.addObject();
                r.set("orderId", order.get("orderId"));
                r.put("placedAt", placedAt);
                r.put("status", status);
                r.set("amount", order.get("amount"));
                r.put("currency", text(order, "currency"));
                r.put("itemCount", order.path("items").size());
            }
        }
        o.put("count", count);
        o.put("itemsOrdered", items);
        o.put("totalAmount", total);
        o.put("averageAmount", count == 0 ? BigDecimal.ZERO
                : total.divide(BigDecimal.valueOf(count), 2, java.math.RoundingMode.HALF_UP));
        o.put("lastOrderAt", lastOrderAt);
        ObjectNode statuses = o.putObject("byStatus");
        byStatus.forEach(statuses::put);
        o.set("list", recent);

        ObjectNode a = out.putObject("account");
        if (account != null && account.isObject()) {
            BigDecimal balance = decimal(account.get("balance"));
            BigDecimal limit = decimal(account.get("creditLimit"));
            a.set("accountId", account.get("accountId"));
            a.put("status", text(account, "status"));
            a.put("currency", text(account, "currency"));
            a.put("balance", balance);
            a.put("creditLimit", limit);
            a.put("availableCredit", limit.add(balance));
            a.put("overdrawn", balance.signum() < 0);
        }
        return out;
    }

    static String text(JsonNode node, String field) {
        JsonNode v = node == null ? null : node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    static BigDecimal decimal(JsonNode v) {
        if (v == null || v.isNull()) return BigDecimal.ZERO;
        try {
            return v.isNumber() ? v.decimalValue() : new BigDecimal(v.asText());
        } catch (NumberFormatException e) {
            return BigDecimal.ZERO;
        }
    }

    static int tierRank(String tier) {
        if (tier == null) return 0;
        switch (tier.toLowerCase(Locale.ROOT)) {
            case "gold": return 1;
            case "silver": return 2;
            case "bronze": return 3;
            default: return 0;
        }
    }

    static int discount(String tier) {
        switch (tierRank(tier)) {
            case 1: return 15;
            case 2: return 10;
            case 3: return 5;
            default: return 0;
        }
    }

    static String mailingLabel(String first, String last, JsonNode address) {
        StringBuilder sb = new StringBuilder();
        sb.append(first == null ? "" : first).append(' ').append(last == null ? "" : last);
        String street = text(address, "street");
        String zip = text(address, "zip");
        String city = text(address, "city");
        String country = text(address, "country");
        if (street != null) sb.append(", ").append(street);
        if (zip != null || city != null) {
            sb.append(", ").append(zip == null ? "" : zip).append(zip != null && city != null ? " " : "")
              .append(city == null ? "" : city);
        }
        if (country != null) sb.append(", ").append(country);
        return sb.toString().trim();
    }

    static Long daysSince(String iso) {
        if (iso == null) return null;
        try {
            return Duration.between(OffsetDateTime.parse(iso), OffsetDateTime.now()).toDays();
        } catch (Exception e) {
            try {
                return Duration.between(java.time.LocalDate.parse(iso.substring(0, Math.min(10, iso.length())))
                        .atStartOfDay().atOffset(java.time.ZoneOffset.UTC), OffsetDateTime.now()).toDays();
            } catch (Exception e2) {
                return null;
            }
        }
    }
}
