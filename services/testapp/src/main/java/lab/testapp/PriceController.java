package lab.testapp;

import java.util.Map;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/** GET /shop/price/{id}: the item's price from the pricing backend (shop.pricing-url), with the item's id. */
@RestController
@RequestMapping("/shop")
class PriceController {
    private static final ParameterizedTypeReference<Map<String, Object>> JSON = new ParameterizedTypeReference<>() { };

    private final RestClient pricing;

    PriceController(RestClient.Builder builder, @Value("${shop.pricing-url}") String pricingUrl) {
        this.pricing = builder.baseUrl(pricingUrl).build();
    }

    @GetMapping("/ping")
    Map<String, String> ping() {
        return Map.of("status", "ok");
    }

    @GetMapping("/price/{id}")
    Map<String, Object> price(@PathVariable int id) {
        Map<String, Object> quote = pricing.get().uri("/prices/{id}", id).retrieve().body(JSON);
        return Map.of("id", id, "price", quote == null ? Map.of() : quote);
    }
}
