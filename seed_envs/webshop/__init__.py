"""WebShop (Yao et al., 2022): find and buy the product an instruction describes.

``gym.make("seed/WebShop-v0")`` is the text site; ``seed/WebShopBrowser-v0`` drives the same
site in headless Chromium. Names load on first use, and heavy modules (search index, Flask,
Selenium) only when used, so ``import seed_envs.webshop`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "PurchaseReward": "seed_envs.webshop.reward",
        "WebShopBrowserEnv": "seed_envs.webshop.browser_env",
        "WebShopData": "seed_envs.webshop.data",
        "WebShopEnv": "seed_envs.webshop.env",
        "generate_catalog": "seed_envs.webshop.generate",
        "load_data": "seed_envs.webshop.data",
        "purchase_reward": "seed_envs.webshop.reward",
        "shared_data": "seed_envs.webshop.data",
    },
)
